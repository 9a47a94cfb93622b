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
VALUE_FIX = f"write the value as text of at most 63 {NAME_RULE}, or empty"
TAINT_FIX = "write {key: ..., value: ..., effect: NoSchedule} or key=value:effect"


def key_problem(key: Any) -> str | None:
    """Why ``key`` is no label or taint key (Kubernetes' qualified name), or None."""
    if not isinstance(key, str) or not key:
        return "is not a non-empty text"
    prefix, slash, name = key.rpartition("/")
    rules = (
        ("/" in prefix, "has more than one '/'"),
        (slash and not prefix, "has an empty prefix before '/'"),
        (len(prefix) > MAX_PREFIX, f"has a prefix longer than {MAX_PREFIX} characters"),
        (
            prefix and not DNS1123_SUBDOMAIN.match(prefix),
            f"has the prefix {prefix}, which is not a lower-case DNS subdomain",
        ),
        (not name, "has an empty name part"),
        (len(name) > MAX_NAME, f"has a name part longer than {MAX_NAME} characters"),
        (name and not QUALIFIED_NAME.match(name), f"has the name part {name}, which is not {NAME_RULE}"),
    )
    return next((why for broken, why in rules if broken), None)


def value_problem(value: Any) -> str | None:
    """Why ``value`` is no label or taint value, or None (null, ``key:`` in YAML, is given as the empty value)."""
    if not isinstance(value, str):
        return f"is not a text (YAML made a {type(value).__name__} of it)"
    if len(value) > MAX_VALUE:
        return f"is longer than {MAX_VALUE} characters"
    return f"is not {NAME_RULE}" if value and not QUALIFIED_NAME.match(value) else None


def check_labels(labels: Any, report: Report, field: str = "node_labels") -> dict[str, str]:
    """The labels, checked; every problem through ``report``."""
    if labels is None or labels == "":
        return {}
    if not isinstance(labels, dict):
        report(field, labels, "is not a mapping of label keys to values", "write it as {key: value, ...}")
        return {}
    checked: dict[str, str] = {}
    for key in sorted(labels, key=str):
        value, where = "" if labels[key] is None else labels[key], f"{field}.{key}"
        key_why, value_why = key_problem(key), value_problem(value)
        if key_why:
            report(where, key, f"is no label key: it {key_why}", LABEL_FIX)
        elif value_why:
            quote = f'quote it: {key}: "{str(value).lower() if isinstance(value, bool) else value}"'
            report(where, value, f"is no label value: it {value_why}", quote if "YAML" in value_why else VALUE_FIX)
        else:
            checked[key] = value
    return checked


def _taint(item: Any) -> dict[str, Any] | None:
    """A taint as a mapping, from a mapping or from ``key[=value]:effect``; None when it is neither."""
    if isinstance(item, dict):
        return dict(item)
    match = TAINT_TEXT.match(item.strip()) if isinstance(item, str) else None
    return {key: value for key, value in match.groupdict().items() if value is not None} if match else None


def check_taints(taints: Any, report: Report, field: str = "node_taints") -> list[dict[str, str]]:
    """The taints, checked and written as Node ``spec.taints`` items (``value`` left out when empty)."""
    if taints is None or taints == "":
        return []
    checked: list[dict[str, str]] = []
    for index, item in enumerate(taints if isinstance(taints, list) else [taints]):
        where, taint = f"{field}[{index}]", _taint(item)
        unknown = sorted(str(key) for key in taint or {} if key not in TAINT_KEYS)
        if taint is None or unknown:
            what = f"has the keys {', '.join(unknown)}, which a taint has not" if unknown else "is not a taint"
            report(where, item, what, "keep key, value, effect" if unknown else TAINT_FIX)
            continue
        key, value, effect = taint.get("key"), taint.get("value"), taint.get("effect")
        value = "" if value is None else value
        key_why, value_why, effect_ok = key_problem(key), value_problem(value), effect in TAINT_EFFECTS
        if key_why:
            report(where + ".key", key, f"is no taint key: it {key_why}", LABEL_FIX)
        if value_why:
            report(where + ".value", value, f"is no taint value: it {value_why}", VALUE_FIX)
        if not effect_ok:
            report(where + ".effect", effect, "is not a taint effect", f"use one of: {', '.join(TAINT_EFFECTS)}")
        if key_why or value_why or not effect_ok:
            continue
        if any(other["key"] == key and other["effect"] == effect for other in checked):
            report(where, item, f"repeats the taint {key}:{effect}", "give each key once per effect")
        else:
            checked.append(dict({"key": str(key), "effect": str(effect)}, **({"value": value} if value else {})))
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
