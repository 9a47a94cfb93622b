"""Label and field selectors with the syntax kube-apiserver accepts."""

from __future__ import annotations

import re

from .errors import bad_request

_SET_TERM = re.compile(r"^\s*(?P<key>[^\s!=()]+)\s+(?P<op>in|notin)\s*\((?P<values>[^)]*)\)\s*$")
_EQ_TERM = re.compile(r"^\s*(?P<key>[^\s!=()]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^\s!=(),]*)\s*$")
_EXISTS_TERM = re.compile(r"^\s*(?P<neg>!?)\s*(?P<key>[^\s!=()]+)\s*$")


def _split_terms(selector: str) -> list:
    """Split on commas that are not inside an ``in (...)`` value list."""
    terms, depth, current = [], 0, ""
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    terms.append(current)
    return [term for term in terms if term.strip()]


def parse_label_selector(selector: str | None) -> list:
    """Return a list of ``(key, op, values)``; op is one of =, !=, in, notin, exists, !exists."""
    requirements = []
    for term in _split_terms(selector or ""):
        match = _SET_TERM.match(term)
        if match:
            values = {value.strip() for value in match["values"].split(",") if value.strip()}
            requirements.append((match["key"], match["op"], values))
            continue
        match = _EQ_TERM.match(term)
        if match:
            op = "!=" if match["op"] == "!=" else "="
            requirements.append((match["key"], op, {match["value"]}))
            continue
        match = _EXISTS_TERM.match(term)
        if match:
            requirements.append((match["key"], "!exists" if match["neg"] else "exists", set()))
            continue
        raise bad_request(f"unable to parse requirement: {term.strip()!r}")
    return requirements


def labels_match(requirements: list, labels: dict | None) -> bool:
    labels = labels or {}
    for key, op, values in requirements:
        present = key in labels
        if op == "exists" and not present:
            return False
        if op == "!exists" and present:
            return False
        if op in ("=", "in") and (not present or labels[key] not in values):
            return False
        # Like kube-apiserver, != and notin also match objects that lack the label.
        if op in ("!=", "notin") and present and labels[key] in values:
            return False
    return True


def parse_field_selector(selector: str | None, kind) -> list:
    """Return ``(path, op, value)`` triples, refusing fields the kind does not index (as the real server does)."""
    requirements = []
    for term in _split_terms(selector or ""):
        match = _EQ_TERM.match(term)
        if not match:
            raise bad_request(f"invalid selector: {term.strip()!r}; can't understand {term.strip()!r}")
        if match["key"] not in kind.field_selectors:
            raise bad_request(f"field label not supported: {match['key']}")
        op = "!=" if match["op"] == "!=" else "="
        requirements.append((match["key"], op, match["value"]))
    return requirements


def field_value(obj: dict, path: str) -> str:
    value = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def fields_match(requirements: list, obj: dict) -> bool:
    for path, op, value in requirements:
        equal = field_value(obj, path) == value
        if equal != (op == "="):
            return False
    return True
