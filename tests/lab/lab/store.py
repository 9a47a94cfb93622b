"""The object store behind the API server: every object of every kind, one resourceVersion counter, watches.

All methods are synchronous and run on the daemon's single asyncio loop, so no locking is needed and
a watch registered in the same call as its replay cannot miss an event.
Objects inside the store are never mutated in place (updates replace them), so events may share them.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import random
import uuid
from collections import deque
from datetime import datetime, timezone

from . import kinds as kinds_table
from .errors import already_exists, conflict, gone, invalid, not_found
from .matching import fields_match, labels_match, parse_field_selector, parse_label_selector

LOG = logging.getLogger(__name__)
_END = object()  # queued to end a watch
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # the alphabet kube-apiserver uses for generateName suffixes


def now_rfc3339() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _spec_part(obj: dict) -> dict:
    """Everything generation tracks: all top-level fields except metadata and status."""
    return {key: value for key, value in obj.items() if key not in ("metadata", "status")}


class Watch:
    """One open watch: an asyncio queue of ``{"type", "object"}`` events, filtered for one request."""

    def __init__(self, store: Store, kind, namespace, label_req, field_req):
        self.store = store
        self.kind = kind
        self.namespace = namespace
        self.label_req = label_req
        self.field_req = field_req
        self.queue: asyncio.Queue = asyncio.Queue()
        self.ended = False

    def wants(self, kind, obj: dict) -> bool:
        if kind is not self.kind:
            return False
        meta = obj.get("metadata", {})
        if self.namespace and meta.get("namespace") != self.namespace:
            return False
        return labels_match(self.label_req, meta.get("labels")) and fields_match(self.field_req, obj)

    def offer(self, event_type: str, kind, obj: dict) -> None:
        if self.wants(kind, obj):
            self.queue.put_nowait({"type": event_type, "object": obj})

    async def next(self, timeout: float | None) -> dict | None:
        """The next event, or None when ``timeout`` seconds pass first (or the watch was ended)."""
        if self.ended:
            return None
        try:
            event = await asyncio.wait_for(self.queue.get(), timeout)
        except asyncio.TimeoutError:
            return None
        return None if event is _END else event

    def end(self) -> None:
        """Wake the reader up and make it finish (the lab is stopping)."""
        self.ended = True
        self.queue.put_nowait(_END)

    def close(self) -> None:
        self.store._watches.discard(self)


class Store:
    def __init__(self, event_window: int = 2000):
        self._objects: dict = {}  # Kind -> {(namespace, name): object}
        self._rv = 0
        self._events: deque = deque(maxlen=event_window)  # (rv, type, kind, object)
        self._compacted_rv = 0  # the newest resourceVersion that fell out of the event window
        self._watches: set = set()
        self._listeners: list = []

    # ----- reading -------------------------------------------------------------------------------
    @property
    def resource_version(self) -> int:
        return self._rv

    def find(self, kind, namespace: str | None, name: str) -> dict | None:
        """A copy of the object, or None."""
        obj = self._bucket(kind).get((namespace if kind.namespaced else None, name))
        return copy.deepcopy(obj) if obj is not None else None

    def get(self, kind, namespace: str | None, name: str) -> dict:
        obj = self.find(kind, namespace, name)
        if obj is None:
            raise not_found(kind, name)
        return obj

    def list(
        self, kind, namespace: str | None = None, label_selector: str | None = None, field_selector: str | None = None
    ) -> tuple:
        """``(items, resourceVersion)``; items sorted by namespace and name like etcd keys."""
        label_req = parse_label_selector(label_selector)
        field_req = parse_field_selector(field_selector, kind)
        items = []
        for (obj_ns, _name), obj in sorted(self._bucket(kind).items(), key=lambda item: (item[0][0] or "", item[0][1])):
            if namespace and obj_ns != namespace:
                continue
            if labels_match(label_req, obj["metadata"].get("labels")) and fields_match(field_req, obj):
                items.append(copy.deepcopy(obj))
        return items, self._rv

    def all_objects(self) -> list:
        return [copy.deepcopy(obj) for bucket in self._objects.values() for obj in bucket.values()]

    # ----- writing -------------------------------------------------------------------------------
    def create(self, kind, obj: dict) -> dict:
        obj = copy.deepcopy(obj)
        obj["apiVersion"], obj["kind"] = kind.api_version, kind.kind
        meta = obj.setdefault("metadata", {})
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise invalid(kind, None, "metadata.name: Required value: name or generateName is required")
            meta["name"] = self._generate_name(kind, meta.get("namespace"), meta["generateName"])
        namespace = meta.get("namespace") if kind.namespaced else None
        if kind.namespaced:
            if not namespace:
                raise invalid(kind, meta["name"], "metadata.namespace: Required value")
            if self.find(kinds_table.NAMESPACE, None, namespace) is None:
                raise not_found(kinds_table.NAMESPACE, namespace)
        else:
            meta.pop("namespace", None)
        key = (namespace, meta["name"])
        if key in self._bucket(kind):
            raise already_exists(kind, meta["name"])
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        meta["generation"] = 1
        meta.pop("deletionTimestamp", None)
        meta["resourceVersion"] = str(self._next_rv())
        self._bucket(kind)[key] = obj
        self._record("ADDED", kind, obj)
        return copy.deepcopy(obj)

    def update(self, kind, obj: dict) -> dict:
        """Replace an object; a resourceVersion in ``obj`` that is not the current one is a 409 Conflict."""
        obj = copy.deepcopy(obj)
        obj["apiVersion"], obj["kind"] = kind.api_version, kind.kind
        meta = obj.setdefault("metadata", {})
        namespace = meta.get("namespace") if kind.namespaced else None
        key = (namespace, meta.get("name"))
        current = self._bucket(kind).get(key)
        if current is None:
            raise not_found(kind, meta.get("name"))
        wanted_rv = meta.get("resourceVersion")
        if wanted_rv and wanted_rv != current["metadata"]["resourceVersion"]:
            raise conflict(kind, meta["name"])
        for immutable in ("uid", "creationTimestamp", "generation", "deletionTimestamp"):
            if immutable in current["metadata"]:
                meta[immutable] = current["metadata"][immutable]
        if _spec_part(obj) != _spec_part(current):
            meta["generation"] = current["metadata"].get("generation", 1) + 1
        meta["resourceVersion"] = str(self._next_rv())
        self._bucket(kind)[key] = obj
        self._record("MODIFIED", kind, obj)
        return copy.deepcopy(obj)

    def delete(self, kind, namespace: str | None, name: str) -> dict:
        """Remove an object, everything in it (namespaces) and every dependent whose owners are all gone."""
        key = (namespace if kind.namespaced else None, name)
        if key not in self._bucket(kind):
            raise not_found(kind, name)
        removed = self._remove(kind, key)
        if kind is kinds_table.NAMESPACE:
            for other, bucket in list(self._objects.items()):
                for other_key in [k for k in bucket if other.namespaced and k[0] == name]:
                    self._remove(other, other_key)
        self._collect_garbage()
        return removed

    def add_listener(self, listener) -> None:
        """``listener(event_type, kind, obj)`` runs after every change, for in-process reactions."""
        self._listeners.append(listener)

    # ----- watching ------------------------------------------------------------------------------
    def watch(
        self,
        kind,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
    ) -> Watch:
        """Open a watch. Without a resourceVersion (or "0") it starts with ADDED events for current objects.

        Raises the 410 ``Expired`` ApiError when events after ``resource_version`` are no longer retained.
        """
        watch = Watch(
            self, kind, namespace, parse_label_selector(label_selector), parse_field_selector(field_selector, kind)
        )
        if resource_version in (None, "", "0"):
            items, _rv = self.list(kind, namespace, label_selector, field_selector)
            for obj in items:
                watch.queue.put_nowait({"type": "ADDED", "object": obj})
        else:
            try:
                since = int(resource_version)
            except ValueError:
                raise invalid(kind, None, f"resourceVersion: Invalid value: {resource_version!r}") from None
            if since < self._compacted_rv:
                raise gone(since, self._compacted_rv + 1)
            for rv, event_type, event_kind, obj in self._events:
                if rv > since:
                    watch.offer(event_type, event_kind, obj)
        self._watches.add(watch)
        return watch

    def end_watches(self) -> None:
        for watch in list(self._watches):
            watch.end()

    # ----- internals -----------------------------------------------------------------------------
    def _bucket(self, kind) -> dict:
        return self._objects.setdefault(kind, {})

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _generate_name(self, kind, namespace, prefix: str) -> str:
        while True:
            name = prefix + "".join(random.choice(_NAME_CHARS) for _index in range(5))
            if (namespace if kind.namespaced else None, name) not in self._bucket(kind):
                return name

    def _remove(self, kind, key) -> dict:
        obj = copy.deepcopy(self._bucket(kind).pop(key))
        obj["metadata"]["resourceVersion"] = str(self._next_rv())
        self._record("DELETED", kind, obj)
        return copy.deepcopy(obj)

    def _collect_garbage(self) -> None:
        """Delete objects whose ownerReferences all point at objects that no longer exist (cascading)."""
        while True:
            live = {obj["metadata"]["uid"] for bucket in self._objects.values() for obj in bucket.values()}
            orphans = [
                (kind, key)
                for kind, bucket in self._objects.items()
                for key, obj in bucket.items()
                if obj["metadata"].get("ownerReferences")
                and not any(ref.get("uid") in live for ref in obj["metadata"]["ownerReferences"])
            ]
            if not orphans:
                return
            for kind, key in orphans:
                self._remove(kind, key)

    def _record(self, event_type: str, kind, obj: dict) -> None:
        if len(self._events) == self._events.maxlen:
            self._compacted_rv = self._events[0][0]
        rv = int(obj["metadata"]["resourceVersion"])
        self._events.append((rv, event_type, kind, obj))
        for watch in list(self._watches):
            watch.offer(event_type, kind, obj)
        for listener in self._listeners:
            try:
                listener(event_type, kind, copy.deepcopy(obj))
            except Exception:  # a broken listener must not break the API server
                LOG.exception("store listener failed")
