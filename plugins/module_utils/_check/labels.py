# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The labels and taints a new worker's Node gets (``node_labels``, ``node_taints``), checked as the API server
checks them, so a mistake stops the run before anything is written rather than at the Node's patch.

The rules follow Kubernetes' validation of a Node:

- a label key (and a taint key) is a qualified name, ``[prefix/]name``: the name 1-63 characters, alphanumerics,
  ``-``, ``_``, ``.``, starting and ending with an alphanumeric; the prefix a DNS-1123 subdomain of at most 253
  characters (kubernetes/kubernetes staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go
  ``IsQualifiedName``@03014f486c86dbe8a7fbe275fe14250854aab219);
- a label value (and a taint value) is empty or at most 63 such characters (same file, ``IsValidLabelValue``);
- a taint's effect is ``NoSchedule``, ``PreferNoSchedule`` or ``NoExecute``, and a key appears once per effect
  (kubernetes/kubernetes pkg/apis/core/validation/validation.go ``validateNodeTaints``
  @a7264f95ffc8b56377da16e83461aa59467ebb3e).

A label written without a value (``node-role.kubernetes.io/infra:``, which YAML reads as null) has the empty
value, as ``oc label node x node-role.kubernetes.io/infra=`` gives it. A taint is a mapping ``{key, value,
effect}`` or the text ``oc adm taint`` takes, ``key[=value]:effect``.
"""

from __future__ import annotations

import re
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Report

QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
MAX_NAME = 63
MAX_PREFIX = 253
MAX_VALUE = 63
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TAINT_KEYS = ("key", "value", "effect")
TAINT_TEXT = re.compile(r"^(?P<key>[^=:]+)(=(?P<value>[^:]*))?:(?P<effect>[^:]+)$")
NAME_RULE = "alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"
LABEL_FIX = "write the key as [prefix/]name, e.g. node-role.kubernetes.io/infra or example.com/rack"
VALUE_FIX = "write the value as text of at most 63 %s, or empty" % NAME_RULE


def key_problem(key: Any) -> str | None:
    """Why ``key`` is no label or taint key (Kubernetes' qualified name), or None."""
    if not isinstance(key, str) or not key:
        return "is not a non-empty text"
    parts = key.split("/")
    if len(parts) > 2:
        return "has more than one '/'"
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            return "has an empty prefix before '/'"
        if len(prefix) > MAX_PREFIX:
            return "has a prefix longer than %d characters" % MAX_PREFIX
        if not DNS1123_SUBDOMAIN.match(prefix):
            return "has the prefix %s, which is not a lower-case DNS subdomain" % prefix
    if not name:
        return "has an empty name part"
    if len(name) > MAX_NAME:
        return "has a name part longer than %d characters" % MAX_NAME
    if not QUALIFIED_NAME.match(name):
        return "has the name part %s, which is not %s" % (name, NAME_RULE)
    return None


def value_problem(value: Any) -> str | None:
    """Why ``value`` is no label or taint value, or None (after ``label_value``)."""
    if isinstance(value, bool) or not isinstance(value, str):
        return "is not a text (YAML made a %s of it)" % type(value).__name__
    if len(value) > MAX_VALUE:
        return "is longer than %d characters" % MAX_VALUE
    if value and not QUALIFIED_NAME.match(value):
        return "is not %s" % NAME_RULE
    return None


def label_value(value: Any) -> Any:
    """A label or taint value as given: null (``key:`` in YAML) is the empty value."""
    return "" if value is None else value


def check_labels(labels: Any, report: Report, field: str = "node_labels") -> dict[str, str]:
    """The labels, checked; every problem through ``report``."""
    if labels is None or labels == "":
        return {}
    if not isinstance(labels, dict):
        report(field, labels, "is not a mapping of label keys to values", "write it as {key: value, ...}")
        return {}
    checked: dict[str, str] = {}
    for key in sorted(labels, key=str):
        value = label_value(labels[key])
        why = key_problem(key)
        if why:
            report("%s.%s" % (field, key), key, "is no label key: it %s" % why, LABEL_FIX)
            continue
        why = value_problem(value)
        if why:
            fix = 'quote it: %s: "%s"' % (key, str(value).lower() if isinstance(value, bool) else value)
            report("%s.%s" % (field, key), value, "is no label value: it %s" % why, fix if "YAML" in why else VALUE_FIX)
            continue
        checked[key] = value
    return checked


def _taint(item: Any) -> dict[str, Any] | None:
    """A taint as a mapping, from a mapping or from ``key[=value]:effect``; None when it is neither."""
    if isinstance(item, dict):
        return dict(item)
    if isinstance(item, str):
        match = TAINT_TEXT.match(item.strip())
        if match:
            taint = {"key": match.group("key"), "effect": match.group("effect")}
            if match.group("value") is not None:
                taint["value"] = match.group("value")
            return taint
    return None


def check_taints(taints: Any, report: Report, field: str = "node_taints") -> list[dict[str, str]]:
    """The taints, checked and written as Node ``spec.taints`` items (``value`` left out when empty)."""
    if taints is None or taints == "":
        return []
    if not isinstance(taints, list):
        taints = [taints]
    checked: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for index, item in enumerate(taints):
        where = "%s[%d]" % (field, index)
        taint = _taint(item)
        if taint is None:
            report(
                where, item, "is not a taint", "write {key: ..., value: ..., effect: NoSchedule} or key=value:effect"
            )
            continue
        unknown = sorted(str(key) for key in taint if key not in TAINT_KEYS)
        if unknown:
            report(
                where, item, "has the keys %s, which a taint has not" % ", ".join(unknown), "keep key, value, effect"
            )
            continue
        key, value, effect = taint.get("key"), label_value(taint.get("value")), taint.get("effect")
        why = key_problem(key)
        if why:
            report(where + ".key", key, "is no taint key: it %s" % why, LABEL_FIX)
        value_why = value_problem(value)
        if value_why:
            report(where + ".value", value, "is no taint value: it %s" % value_why, VALUE_FIX)
        if effect not in TAINT_EFFECTS:
            report(where + ".effect", effect, "is not a taint effect", "use one of: %s" % ", ".join(TAINT_EFFECTS))
        if why or value_why or effect not in TAINT_EFFECTS:
            continue
        pair = (str(key), str(effect))  # (texts: checked above)
        if pair in seen:
            report(where, item, "repeats the taint %s:%s" % pair, "give each key once per effect")
            continue
        seen.add(pair)
        checked.append(dict({"key": pair[0], "effect": pair[1]}, **({"value": str(value)} if value else {})))
    return checked


def merged_marks(
    host_labels: Any, host_taints: Any, play_labels: dict[str, str], play_taints: list[dict[str, str]], report: Report
) -> tuple[dict[str, str], list[dict[str, str]]]:
    """A host's labels and taints: the play's (``day2_node_labels``, ``day2_node_taints``, checked once by the
    caller) with the host's own over them (a label of the same key; the taints of the same key)."""
    labels = dict(play_labels, **check_labels(host_labels, report))
    own = check_taints(host_taints, report)
    keys = {taint["key"] for taint in own}
    return labels, [taint for taint in play_taints if taint["key"] not in keys] + own
