"""The three patch flavours kube-apiserver accepts, applied to plain dicts."""

from __future__ import annotations

import copy

from .errors import ApiError, bad_request

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"

# Lists that strategic merge merges element by element (by this key); every other list is replaced.
_KEYED_LISTS = {
    "containers": "name",
    "initContainers": "name",
    "conditions": "type",
    "volumes": "name",
    "env": "name",
    "ports": "containerPort",
    "volumeMounts": "mountPath",
    "addresses": "type",
}


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    return _merge(target, patch, keyed_lists=False)


def strategic_merge_patch(target, patch, field_name: str = ""):
    """Merge like a merge patch, but merge the well-known keyed lists item by item."""
    return _merge(target, patch, True, field_name)


def _merge(target, patch, keyed_lists: bool, field_name: str = ""):
    if keyed_lists and isinstance(patch, list) and field_name in _KEYED_LISTS and isinstance(target, list):
        return _merge_keyed_list(target, patch, field_name)
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value, keyed_lists, key)
    return result


def _merge_keyed_list(target: list, patch: list, field_name: str) -> list:
    key = _KEYED_LISTS[field_name]
    result = copy.deepcopy(target)
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise bad_request(f"strategic merge patch: list {field_name} items need the key {key!r}")
        existing = next((entry for entry in result if isinstance(entry, dict) and entry.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            result = [entry for entry in result if entry is not existing]
        elif existing is None:
            result.append(copy.deepcopy(item))
        else:
            result[result.index(existing)] = _merge(existing, item, True)
    return result


def _pointer(path: str) -> list:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"json patch: invalid path {path!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _parent(document, parts: list, path: str):
    node = document
    for part in parts[:-1]:
        try:
            node = node[int(part)] if isinstance(node, list) else node[part]
        except (KeyError, IndexError, ValueError, TypeError):
            raise _unprocessable(f"json patch: path {path!r} does not exist") from None
    return node


def _unprocessable(message: str) -> ApiError:
    return ApiError(422, "Invalid", message)


def _get(document, path: str):
    parts = _pointer(path)
    if not parts:
        return document
    parent = _parent(document, parts, path)
    try:
        return parent[int(parts[-1])] if isinstance(parent, list) else parent[parts[-1]]
    except (KeyError, IndexError, ValueError, TypeError):
        raise _unprocessable(f"json patch: path {path!r} does not exist") from None


def _remove(document, path: str):
    parts = _pointer(path)
    parent = _parent(document, parts, path)
    try:
        if isinstance(parent, list):
            return parent.pop(int(parts[-1]))
        return parent.pop(parts[-1])
    except (KeyError, IndexError, ValueError, TypeError):
        raise _unprocessable(f"json patch: cannot remove {path!r}: not found") from None


def _add(document, path: str, value, replace: bool = False):
    parts = _pointer(path)
    if not parts:
        return copy.deepcopy(value)
    parent = _parent(document, parts, path)
    last = parts[-1]
    if isinstance(parent, list):
        index = len(parent) if last == "-" else int(last)
        if replace:
            parent[index] = copy.deepcopy(value)
        else:
            parent.insert(index, copy.deepcopy(value))
    elif isinstance(parent, dict):
        if replace and last not in parent:
            raise _unprocessable(f"json patch: cannot replace {path!r}: not found")
        parent[last] = copy.deepcopy(value)
    else:
        raise _unprocessable(f"json patch: parent of {path!r} is not a container")
    return document


def json_patch(document, operations):
    """RFC 6902 JSON patch (add, remove, replace, move, copy, test)."""
    if not isinstance(operations, list):
        raise bad_request("json patch: the body must be a list of operations")
    result = copy.deepcopy(document)
    for operation in operations:
        op, path = operation.get("op"), operation.get("path", "")
        if op == "add":
            result = _add(result, path, operation.get("value"))
        elif op == "remove":
            _remove(result, path)
        elif op == "replace":
            result = _add(result, path, operation.get("value"), replace=True)
        elif op == "move":
            value = _remove(result, operation["from"])
            result = _add(result, path, value)
        elif op == "copy":
            result = _add(result, path, _get(result, operation["from"]))
        elif op == "test":
            if _get(result, path) != operation.get("value"):
                raise _unprocessable(f"json patch: test failed at {path!r}")
        else:
            raise bad_request(f"json patch: unknown op {op!r}")
    return result


def apply_patch(current: dict, patch, content_type: str, builtin_kind: bool):
    """Apply one PATCH body of the given content type; raise the real server's errors for unsupported ones."""
    media = content_type.split(";")[0].strip()
    if media == JSON_PATCH:
        return json_patch(current, patch)
    if media in (MERGE, APPLY):
        # Server-side apply is approximated by a merge patch: good enough for the collection's needs.
        return merge_patch(current, patch)
    if media == STRATEGIC:
        if not builtin_kind:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format - accepted media types include: "
                f"{JSON_PATCH}, {MERGE}, {APPLY}",
            )
        return strategic_merge_patch(current, patch)
    raise ApiError(415, "UnsupportedMediaType", f"the body of the request was in an unknown format: {media}")
