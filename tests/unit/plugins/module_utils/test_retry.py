# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The retry policy of _common.k8s (pure) and how its ApiClient applies it: reads and deletes after any transient
failure, writes after a 429 only, creates that look before they repeat, updates after a fresh GET, connect's
discovery."""

import json

import pytest
from ansible_collections.kubernetes.core.plugins.module_utils.k8s import client as core_client
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import DynamicApiError
from urllib3.exceptions import ProtocolError

from ansible_collections.openshift_agent.day2.plugins.module_utils._common import k8s
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import (
    ApiAccessError,
    ApiClient,
    connect,
    core_target,
    group_target,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.module import Login

POLICY = k8s.RetryPolicy(attempts=4, base=1, factor=2, cap=3, retry_after_cap=5, budget=20)


# ----- the policy ----------------------------------------------------------------------------------
def test_backoff_doubles_up_to_the_cap_with_jitter_between_half_and_all():
    assert [POLICY.backoff(n, rand=lambda: 1.0) for n in (1, 2, 3, 4)] == [1, 2, 3, 3]
    assert [POLICY.backoff(n, rand=lambda: 0.0) for n in (1, 2, 3, 4)] == [0.5, 1, 1.5, 1.5]


def test_retry_after_is_honoured_and_capped():
    assert POLICY.backoff(1, retry_after=2, rand=lambda: 1.0) == 2
    assert POLICY.backoff(3, retry_after=0, rand=lambda: 1.0) == 0
    assert POLICY.backoff(1, retry_after=600) == 5


@pytest.mark.parametrize("status,transient", [(None, True), (429, True), (500, True), (502, True), (503, True),
                                              (504, True), (501, False), (400, False), (403, False), (404, False),
                                              (409, False)])  # fmt: skip
def test_what_is_transient(status, transient):
    assert k8s.is_transient(status) is transient


@pytest.mark.parametrize(
    "headers,seconds",
    [({"Retry-After": "1"}, 1.0), ({"retry-after": "2.5"}, 2.5), ({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"},
     None), ({"Retry-After": "-3"}, None), ({}, None), (None, None), ("not headers", None)],
)  # fmt: skip
def test_retry_after_seconds(headers, seconds):
    assert k8s.retry_after_seconds(headers) == seconds


class Boom(Exception):
    def __init__(self, status, retry_after=None):
        super().__init__(status)
        self.status, self.retry_after = status, retry_after


def classify(error):
    return k8s.Attempt(error.status, error.retry_after) if isinstance(error, Boom) else None


def failing(*errors, result="done"):
    pending = list(errors)
    calls = []

    def function():
        calls.append(1)
        if pending:
            raise pending.pop(0)
        return result

    return function, calls


def test_call_retries_transient_failures_and_sleeps_the_backoff():
    slept = []
    function, calls = failing(Boom(503), Boom(None), Boom(429, retry_after=1))
    assert k8s.call(function, POLICY, classify, sleep=slept.append, rand=lambda: 1.0) == "done"
    assert len(calls) == 4 and slept == [1, 2, 1]


def test_call_gives_up_after_the_attempts_with_the_last_error():
    function, calls = failing(*[Boom(500) for _attempt in range(10)])
    with pytest.raises(Boom):
        k8s.call(function, POLICY, classify, sleep=lambda _s: None)
    assert len(calls) == POLICY.attempts


def test_call_gives_up_when_the_waiting_budget_is_spent():
    policy = k8s.RetryPolicy(attempts=100, base=4, cap=4, budget=10)
    function, calls = failing(*[Boom(503) for _attempt in range(100)])
    slept = []
    with pytest.raises(Boom):
        k8s.call(function, policy, classify, sleep=slept.append, rand=lambda: 1.0)
    assert slept == [4, 4] and len(calls) == 3


def test_call_passes_other_errors_at_once():
    for error in (Boom(403), Boom(404), KeyError("bug")):
        function, calls = failing(error)
        with pytest.raises(type(error)):
            k8s.call(function, POLICY, classify, sleep=lambda _s: pytest.fail("no wait"))
        assert len(calls) == 1


def test_call_with_a_narrower_retryable():
    slept = []
    function, calls = failing(Boom(429), Boom(503))
    with pytest.raises(Boom) as caught:
        k8s.call(function, POLICY, classify, lambda a: a.status == 429, sleep=slept.append)
    assert caught.value.status == 503 and len(slept) == 1 and len(calls) == 2


# ----- ApiClient -----------------------------------------------------------------------------------
class Response:
    def __init__(self, data):
        self.data = data


def api_error(status, retry_after=None):
    error = ApiException(status, "Status %d" % status)
    error.body = json.dumps({"message": "the server says %d" % status})
    error.headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    return DynamicApiError(error)


class Scripted:
    """DynamicClient.request stand-in: each (method, path) answers from its script in turn (the last one
    repeats); an int is that HTTP status, "reset" a dropped connection, a callable is called with the body."""

    def __init__(self, script):
        self.script = {key: list(value) for key, value in script.items()}
        self.calls, self.params = [], []

    def request(self, method, path, body=None, serialize=True, **params):
        self.calls.append((method, path))
        self.params.append(params)
        answers = self.script[(method, path)]
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if callable(answer):
            answer = answer(body)
        if answer == "reset":
            raise ProtocolError("Connection aborted.", ConnectionResetError(104, "Connection reset by peer"))
        if isinstance(answer, int):
            raise api_error(answer, retry_after=1 if answer == 429 else None)
        return Response(json.dumps(answer).encode())


def client(script):
    slept = []
    dynamic = Scripted(script)
    return ApiClient(dynamic, POLICY, slept.append), dynamic, slept


NODES = core_target("nodes")


def test_reads_are_retried_after_5xx_429_and_resets_honouring_retry_after():
    api, _dynamic, slept = client({("GET", NODES.path): [503, "reset", 429, {"items": []}]})
    assert api.get(NODES) == {"items": []}
    assert api.calls == 4 and len(slept) == 3 and slept[2] == 1  # three retries; the 429's Retry-After: 1


def test_a_read_that_keeps_failing_ends_in_the_last_error():
    api, dynamic, _slept = client({("GET", NODES.path): [500]})
    with pytest.raises(ApiAccessError) as caught:
        api.get(NODES)
    assert caught.value.status == 500 and len(dynamic.calls) == POLICY.attempts


def test_a_404_or_403_is_not_retried():
    api, dynamic, _slept = client({("GET", NODES.path): [404]})
    assert api.get(NODES) is None and len(dynamic.calls) == 1
    api, dynamic, _slept = client({("GET", NODES.path): [403]})
    with pytest.raises(ApiAccessError):
        api.get(NODES)
    assert len(dynamic.calls) == 1


def test_deletes_are_retried_and_a_404_after_a_reset_means_deleted():
    ns = core_target("namespaces", "x", verb="delete")
    api, dynamic, _slept = client({("DELETE", ns.path): ["reset", 404]})
    assert api.delete(ns) is False and len(dynamic.calls) == 2


def test_a_put_is_retried_after_a_429_only():
    cm = core_target("configmaps", "x", "ns", verb="update")
    api, dynamic, _slept = client({("PUT", cm.path): [429, {"ok": 1}]})
    assert api.request("PUT", cm, body={}) == {"ok": 1}
    api, dynamic, _slept = client({("PUT", cm.path): [503, {"ok": 1}]})
    with pytest.raises(ApiAccessError):
        api.request("PUT", cm, body={})
    assert len(dynamic.calls) == 1


NAMESPACES = core_target("namespaces", verb="create")


def test_a_review_is_a_question_asked_again_after_a_reset_or_a_5xx():
    review = group_target("authorization.k8s.io", "v1", "selfsubjectaccessreviews", verb="create")
    answer = {"status": {"allowed": True}}
    api, dynamic, _slept = client({("POST", review.path): ["reset", 503, answer]})
    assert api.create(review, {"spec": {}}) == answer and len(dynamic.calls) == 3
    # any other POST is repeated after a 429 only (create() looks for the object first)
    api, dynamic, _slept = client({("POST", NAMESPACES.path): [503, {}]})
    with pytest.raises(ApiAccessError):
        api.request("POST", NAMESPACES, body={})
    assert len(dynamic.calls) == 1


LABELS = {"app.kubernetes.io/managed-by": "openshift_agent.day2", "openshift-agent.day2/run": "r1"}
GENERATED = {"metadata": {"generateName": "openshift-node-joiner-", "labels": LABELS}}
SELECTED = "/api/v1/namespaces?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dopenshift_agent.day2%2Copenshift-agent.day2%2Frun%3Dr1"  # noqa: E501


def test_a_generate_name_create_in_doubt_is_found_by_its_labels_not_made_twice():
    made = {"metadata": {"name": "openshift-node-joiner-abcde", "labels": LABELS}}
    api, dynamic, _slept = client({("POST", NAMESPACES.path): ["reset"], ("GET", SELECTED): [{"items": [made]}]})
    assert api.create(NAMESPACES, GENERATED) == made
    assert [c[0] for c in dynamic.calls] == ["POST", "GET"]


def test_a_generate_name_create_that_did_not_happen_is_made_again():
    made = {"metadata": {"name": "openshift-node-joiner-abcde", "labels": LABELS}}
    api, dynamic, _slept = client({("POST", NAMESPACES.path): [500, made], ("GET", SELECTED): [{"items": []}]})
    assert api.create(NAMESPACES, GENERATED) == made
    assert [c[0] for c in dynamic.calls] == ["POST", "GET", "POST"]


def test_a_generate_name_create_without_labels_is_never_repeated():
    api, dynamic, _slept = client({("POST", NAMESPACES.path): ["reset", {}]})
    with pytest.raises(ApiAccessError):
        api.create(NAMESPACES, {"metadata": {"generateName": "x-"}})
    assert len(dynamic.calls) == 1


def test_a_named_create_in_doubt_takes_its_own_object_and_refuses_a_stranger():
    roles = group_target("rbac.authorization.k8s.io", "v1", "clusterroles", verb="create")
    body = {"metadata": {"name": "r", "labels": LABELS}}
    api, _dynamic, _slept = client({("POST", roles.path): [503], ("GET", roles.path + "/r"): [body]})
    assert api.create(roles, body) == body
    stranger = {"metadata": {"name": "r", "labels": {}}}
    api, _dynamic, _slept = client({("POST", roles.path): ["reset", 409], ("GET", roles.path + "/r"): [404, stranger]})
    with pytest.raises(ApiAccessError) as caught:
        api.create(roles, body)
    assert caught.value.status == 409 and "is not the one this run created" in caught.value.message


def test_a_create_refused_for_good_is_not_repeated():
    api, dynamic, _slept = client({("POST", NAMESPACES.path): [403]})
    with pytest.raises(ApiAccessError):
        api.create(NAMESPACES, GENERATED)
    assert len(dynamic.calls) == 1


# ----- update_fresh: a write on a fresh object (an approval, a merge-patch with the resourceVersion) -------------
CSR = group_target("certificates.k8s.io", "v1", "certificatesigningrequests", "csr-1")
APPROVAL = group_target("certificates.k8s.io", "v1", "certificatesigningrequests", "csr-1/approval", verb="update")


def approve(csr):
    conditions = (csr.get("status") or {}).get("conditions") or []
    if any(c.get("type") == "Approved" for c in conditions):
        return None
    return "PUT", APPROVAL, dict(csr, status={"conditions": [*conditions, {"type": "Approved", "status": "True"}]})


PENDING = {"metadata": {"name": "csr-1", "resourceVersion": "1"}, "status": {}}
APPROVED = {"metadata": {"name": "csr-1", "resourceVersion": "3"}, "status": {"conditions": [{"type": "Approved"}]}}


def test_an_approval_after_a_conflict_is_made_on_a_fresh_get():
    bodies = []
    api, dynamic, _slept = client(
        {("GET", CSR.path): [PENDING], ("PUT", APPROVAL.path): [409, lambda body: bodies.append(body) or APPROVED]}
    )
    assert api.update_fresh(CSR, approve) == APPROVED
    assert [c[0] for c in dynamic.calls] == ["GET", "PUT", "GET", "PUT"]


def test_an_approval_whose_put_was_lost_but_made_is_not_made_twice():
    api, dynamic, _slept = client({("GET", CSR.path): [PENDING, APPROVED], ("PUT", APPROVAL.path): ["reset"]})
    assert api.update_fresh(CSR, approve) == APPROVED
    assert [c[0] for c in dynamic.calls] == ["GET", "PUT", "GET"]


def test_update_fresh_of_a_gone_object_and_of_a_refusal():
    api, _dynamic, _slept = client({("GET", CSR.path): [404]})
    assert api.update_fresh(CSR, approve) is None
    api, dynamic, _slept = client({("GET", CSR.path): [PENDING], ("PUT", APPROVAL.path): [403]})
    with pytest.raises(ApiAccessError) as caught:
        api.update_fresh(CSR, approve)
    assert caught.value.status == 403 and len(dynamic.calls) == 2


def test_a_merge_patch_after_a_conflict_carries_the_fresh_resource_version():
    node = core_target("nodes", "worker-0")
    stale = {"metadata": {"name": "worker-0", "resourceVersion": "7", "labels": {}}}
    fresh = {"metadata": {"name": "worker-0", "resourceVersion": "8", "labels": {}}}
    sent = []

    def label(obj):
        if obj["metadata"]["labels"].get("zone") == "a":
            return None
        return (
            "PATCH",
            node,
            {"metadata": {"labels": {"zone": "a"}, "resourceVersion": obj["metadata"]["resourceVersion"]}},
        )

    patched = {"metadata": {"name": "worker-0", "resourceVersion": "9", "labels": {"zone": "a"}}}
    api, dynamic, _slept = client(
        {("GET", node.path): [stale, fresh], ("PATCH", node.path): [409, lambda body: sent.append(body) or patched]}
    )
    assert api.update_fresh(node, label, content_type="application/merge-patch+json") == patched
    assert [c[0] for c in dynamic.calls] == ["GET", "PATCH", "GET", "PATCH"]
    assert sent[0]["metadata"]["resourceVersion"] == "8" and dynamic.params[-1]["content_type"].startswith(
        "application"
    )


# ----- connect -------------------------------------------------------------------------------------


def test_connect_tries_discovery_again_after_a_transient_failure(monkeypatch):
    k8s = type("K8SClient", (), {"client": type("Dynamic", (), {"configuration": None})()})()
    answers = [api_error(503), ProtocolError("reset"), k8s]

    def get_api_client(module=None, **kwargs):
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(core_client, "get_api_client", get_api_client)
    slept = []
    client_, api = connect(Login({"kubeconfig": "/k/kc"}), POLICY, slept.append)
    assert client_ is k8s and len(slept) == 2 and api.policy is POLICY


def test_connect_does_not_try_a_bad_kubeconfig_again(monkeypatch):
    calls = []

    def get_api_client(module=None, **kwargs):
        calls.append(1)
        raise CoreException("Could not create API client: Invalid kube-config file. No configuration found.")

    monkeypatch.setattr(core_client, "get_api_client", get_api_client)
    with pytest.raises(ApiAccessError):
        connect(Login({"kubeconfig": "/k/kc"}), POLICY, lambda _s: pytest.fail("no wait"))
    assert calls == [1]
