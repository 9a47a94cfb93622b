# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""KubeCsrApi over fake transports: the streaming watch, list and approve."""

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._join import csr_api
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.csr_api import (
    CsrCache,
    KubeCsrApi,
    WatchBroken,
)

# ---------------------------------------------------------------- KubeCsrApi over fake transports


class FakeResponse:
    def __init__(self, chunks, error=None):
        self.chunks = chunks
        self.error = error
        self.closed = False
        self.released = False

    def stream(self, amt=None):
        yield from self.chunks
        if self.error is not None:
            raise self.error

    def close(self):
        self.closed = True

    def release_conn(self):
        self.released = True


class FakeDynamicClient:
    def __init__(self, response):
        self.response = response
        self.requests = []

    def request(self, method, path, **params):
        self.requests.append((method, path, params))
        if isinstance(self.response, Exception):
            raise self.response
        return self.response


class FakeReader:
    api_url = "https://api.lab:6443"

    def __init__(self):
        self.requests = []

    def request(self, method, target, body=None):
        self.requests.append((method, target, body))
        return {"items": [], "metadata": {"resourceVersion": "7"}}


def test_kube_watch_streams_events_split_across_chunks_and_closes():
    response = FakeResponse(
        [
            b'{"type": "ADDED", "object": {"metadata": {"name": "a"}}}\n{"type": "MOD',
            b'IFIED", "object": {"metadata": {"name": "a"}}}\n',
            b"\n",
        ]
    )
    client = FakeDynamicClient(response)
    events = list(KubeCsrApi(FakeReader(), client).watch_csrs("42", 10))
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED"]
    _method, path, params = client.requests[0]
    assert path == (
        "/apis/certificates.k8s.io/v1/certificatesigningrequests?allowWatchBookmarks=true"
        "&resourceVersion=42&timeoutSeconds=10&watch=true"
    )
    assert params["_request_timeout"] == (csr_api.WATCH_CONNECT_TIMEOUT, 10 + csr_api.WATCH_READ_GRACE)
    assert params["serialize"] is False  # otherwise the client reads the whole body before returning
    assert response.closed and response.released


def test_kube_watch_turns_transport_failures_into_watch_broken():
    response = FakeResponse([b'{"type": "ADDED", "object": {}}\n'], error=ConnectionResetError("reset by peer"))
    events = KubeCsrApi(FakeReader(), FakeDynamicClient(response)).watch_csrs("1", 5)
    assert next(events)["type"] == "ADDED"
    with pytest.raises(WatchBroken):
        next(events)
    assert response.closed

    with pytest.raises(WatchBroken):
        KubeCsrApi(FakeReader(), FakeDynamicClient(OSError("connection refused"))).watch_csrs("1", 5)


def test_kube_approve_puts_to_the_approval_subresource():
    reader = FakeReader()
    api = KubeCsrApi(reader, None)
    assert api.list_csrs() == ([], "7")
    api.approve("node-csr-abc", {"kind": "CertificateSigningRequest"})
    method, target, _body = reader.requests[-1]
    assert method == "PUT"
    assert target.path == "/apis/certificates.k8s.io/v1/certificatesigningrequests/node-csr-abc/approval"
    assert target.describe() == "update certificatesigningrequests/approval.certificates.k8s.io node-csr-abc"


def csr_event(kind, name, rv, conditions=()):
    obj = {"metadata": {"name": name, "resourceVersion": rv}, "status": {"conditions": list(conditions)}}
    return {"type": kind, "object": obj}


def test_the_cache_follows_the_watch_and_says_when_a_decision_may_change():
    cache = CsrCache()
    cache.replace([{"metadata": {"name": "a"}}, {"metadata": {}}], "10")
    assert list(cache.objects) == ["a"] and cache.resource_version == "10"
    assert cache.apply(csr_event("ADDED", "b", "11")) is True
    approved = [{"type": "Approved", "status": "True"}]
    assert cache.apply(csr_event("MODIFIED", "b", "12", approved)) is True
    # a replay from before the approval is older than what the cache holds: ignored
    assert cache.apply(csr_event("MODIFIED", "b", "13")) is False
    assert cache.objects["b"]["status"]["conditions"] == approved
    # the same conditions (only a certificate added) change no decision
    assert cache.apply(csr_event("MODIFIED", "b", "14", approved)) is False
    assert cache.apply({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "15"}}}) is False
    assert cache.apply(csr_event("DELETED", "b", "16")) is True
    assert cache.apply(csr_event("DELETED", "b", "17")) is False
    assert sorted(cache.objects) == ["a"] and cache.resource_version == "17"
    with pytest.raises(WatchBroken) as broken:
        cache.apply({"type": "ERROR", "object": {"code": 410, "message": "too old resource version"}})
    assert broken.value.status == 410 and "too old resource version" in str(broken.value)
