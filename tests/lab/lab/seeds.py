"""The seeded day-1 cluster: ``seeds/default/*.yaml`` plus the same-named replacements of a variant.

How a variant directory ``seeds/<variant>/`` is read:

- every ``*.yaml`` file is one object, or one ``List`` document of objects (yamllint wants one document a file);
- a file with the name of a default file **replaces** it; any other file is **added**;
- a file with no document at all (empty, or comments only) **removes** the default file of that name: the
  object does not exist in that variant (e.g. ConfigMap ``installer-images`` on 4.17 and 4.18);
- a file named ``standalone`` makes the variant **not inherit the default seed**: only its own files are
  loaded. Its non-comment lines name the CRD-backed resources (``group/plural``) the API server serves for
  the variant, as an API server that knows only those CRDs would (other OpenShift kinds then answer 404
  "the server could not find the requested resource"); built-in Kubernetes kinds are always served.
  With no such line every registered kind is served.
- any other file (e.g. a ``README``) is ignored.

``load_into`` also creates the namespaces kube-apiserver creates by itself (``default``, ``kube-system``,
``kube-public``, ``kube-node-lease``) when the seed does not hold them, and nothing else.
"""

from __future__ import annotations

import functools
import os

import yaml

from . import admission, kinds

SEEDS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")
DEFAULT = "default"
STANDALONE = "standalone"
# kube-apiserver's own system namespaces (its "system namespaces" controller creates them at start).
APISERVER_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def variants() -> list:
    return sorted(entry for entry in os.listdir(SEEDS_DIR) if os.path.isdir(os.path.join(SEEDS_DIR, entry)))


def _check(variant: str) -> None:
    if variant not in variants():
        raise ValueError(f"unknown lab variant {variant!r}; known: {', '.join(variants())}")


def is_standalone(variant: str) -> bool:
    _check(variant)
    return os.path.exists(os.path.join(SEEDS_DIR, variant, STANDALONE))


@functools.cache
def served_resources(variant: str) -> frozenset | None:
    """The ``(group, plural)`` of the CRD-backed kinds a standalone variant serves; None: every kind."""
    if not is_standalone(variant):
        return None
    with open(os.path.join(SEEDS_DIR, variant, STANDALONE), encoding="utf-8") as handle:
        lines = [line.strip() for line in handle if line.strip() and not line.lstrip().startswith("#")]
    return frozenset(tuple(line.split("/", 1)) for line in lines) or None


def serves(variant: str, kind) -> bool:
    """Whether the API server of ``variant`` serves ``kind`` (built-in kinds always)."""
    served = served_resources(variant)
    return served is None or kind.builtin or (kind.group, kind.plural) in served


def seed_files(variant: str) -> dict:
    """``{file name: path}`` of the files that make up ``variant`` (a removing file included)."""
    _check(variant)
    directories = [variant] if is_standalone(variant) else list(dict.fromkeys([DEFAULT, variant]))
    files = {}
    for directory in directories:
        folder = os.path.join(SEEDS_DIR, directory)
        for name in sorted(os.listdir(folder)):
            if name.endswith(".yaml"):
                files[name] = os.path.join(folder, name)
    return files


def load_seed(variant: str = DEFAULT) -> list:
    """Every seeded object of ``variant`` (namespaces first, then files in name order)."""
    objects = []
    for _name, path in sorted(seed_files(variant).items()):
        with open(path, encoding="utf-8") as handle:
            for doc in yaml.safe_load_all(handle):
                # A file holding several objects is one List document; a file with no document adds nothing.
                objects.extend(doc.get("items", []) if doc and doc.get("kind") == "List" else [doc] if doc else [])
    return sorted(objects, key=lambda obj: obj.get("kind") != "Namespace")


def find(objects: list, kind: str, name: str, namespace: str | None = None) -> dict:
    """The seeded object of that kind and name (for tests comparing facts with seeds)."""
    for obj in objects:
        meta = obj.get("metadata", {})
        if obj.get("kind") == kind and meta.get("name") == name and meta.get("namespace") == namespace:
            return obj
    raise KeyError(f"no seeded {kind} {namespace + '/' if namespace else ''}{name}")


def load_into(store, variant: str = DEFAULT) -> int:
    """Create the seed in ``store`` (after kube-apiserver's own namespaces); return the number of objects."""
    objects = load_seed(variant)
    seeded = {obj["metadata"]["name"] for obj in objects if obj.get("kind") == "Namespace"}
    system = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
        }
        for name in APISERVER_NAMESPACES
        if name not in seeded
    ]
    for obj in system + objects:
        kind = kinds.for_object(obj)
        created = admission.normalize(kind, obj)
        if kind is kinds.NAMESPACE:
            created.setdefault("spec", {"finalizers": ["kubernetes"]})
            created.setdefault("status", {"phase": "Active"})
        store.create(kind, created)
    return len(system) + len(objects)
