"""The seeded day-1 cluster: ``seeds/default/*.yaml`` plus the same-named replacements of a variant.

A variant directory holds only the files it changes (a file with the default's name replaces it) and
any extra files, so each file can be compared with FACTS.md on its own.
"""

from __future__ import annotations

import os

import yaml

from . import admission, kinds

SEEDS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")
DEFAULT = "default"


def variants() -> list:
    return sorted(entry for entry in os.listdir(SEEDS_DIR) if os.path.isdir(os.path.join(SEEDS_DIR, entry)))


def seed_files(variant: str) -> dict:
    """``{file name: path}`` of the files that make up ``variant``."""
    if variant not in variants():
        raise ValueError(f"unknown lab variant {variant!r}; known: {', '.join(variants())}")
    files = {}
    for directory in dict.fromkeys([DEFAULT, variant]):
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
                # A file holding several objects is one List document (yamllint wants one document a file).
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
    objects = load_seed(variant)
    for obj in objects:
        kind = kinds.for_object(obj)
        store.create(kind, admission.normalize(kind, obj))
    return len(objects)
