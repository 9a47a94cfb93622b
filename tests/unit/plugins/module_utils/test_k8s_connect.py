# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_common.k8s: connect turns every failure to create the client into ApiAccessError; ApiClient's requests."""

import json

import pytest
import yaml
from ansible_collections.kubernetes.core.plugins.module_utils.k8s import client as core_client
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import DynamicApiError
from urllib3.connectionpool import HTTPSConnectionPool
from urllib3.exceptions import MaxRetryError, NewConnectionError

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import (
    ApiAccessError,
    ApiClient,
    Target,
    connect,
    core_target,
    group_target,
    with_query,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.module import Login

TOKEN = "sha256~UNIT-TOKEN-never-printed"


@pytest.fixture(autouse=True)
def no_auth_environment(monkeypatch, tmp_path):
    for name in ("KUBECONFIG", "K8S_AUTH_KUBECONFIG", "K8S_AUTH_CONTEXT", "K8S_AUTH_HOST", "K8S_AUTH_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config of the machine


def kubeconfig(tmp_path, server="https://127.0.0.1:1"):
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": TOKEN}}],
                "contexts": [{"name": "admin", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "admin",
            }
        )
    )
    return str(path)


def raising(error):
    def get_api_client(module=None, **kwargs):
        raise error

    return get_api_client


def connect_error(module):
    with pytest.raises(ApiAccessError) as caught:
        connect(module, sleep=lambda _seconds: None)  # an unreachable server is tried again (test_retry.py)
    assert isinstance(caught.value, Day2Error) and caught.value.status is None
    assert TOKEN not in caught.value.message
    return caught.value.message


def test_a_core_exception_names_the_kubeconfig_the_context_and_the_fix(monkeypatch):
    reason = (
        "Could not create API client: Invalid kube-config file. Expected object with name nope in /k/kc/contexts list"
    )
    monkeypatch.setattr(core_client, "get_api_client", raising(CoreException(reason)))
    message = connect_error(Login({"kubeconfig": "/k/kc", "context": "nope"}))
    assert message.startswith("cannot load the kubeconfig /k/kc with context nope: Could not create API client")
    assert "Expected object with name nope in /k/kc/contexts list" in message
    assert "oc config get-contexts" in message


def test_a_missing_kubeconfig_names_the_path_and_how_to_give_one(tmp_path):
    missing = str(tmp_path / "no-such-kubeconfig")
    message = connect_error(Login({"kubeconfig": missing}))
    assert message.startswith("cannot load the kubeconfig %s with its current-context: " % missing)
    assert "No configuration found" in message
    assert "installer's auth/kubeconfig" in message and "host with api_key" in message


def test_a_context_the_kubeconfig_lacks_is_named(tmp_path):
    path = kubeconfig(tmp_path)
    message = connect_error(Login({"kubeconfig": path, "context": "nope"}))
    assert message.startswith("cannot load the kubeconfig %s with context nope: " % path)
    assert "Expected object with name nope" in message and "oc config get-contexts" in message


def test_a_kubeconfig_that_is_not_yaml_is_an_access_error(tmp_path):
    path = tmp_path / "kubeconfig"
    path.write_text("{{{ not yaml")
    message = connect_error(Login({"kubeconfig": str(path)}))
    assert message.startswith("cannot load the kubeconfig %s with its current-context: " % path)


def test_a_directory_as_kubeconfig_is_named(tmp_path):
    message = connect_error(Login({"kubeconfig": str(tmp_path)}))
    assert message.startswith("cannot read %s (Is a directory), named by the kubeconfig %s" % (tmp_path, tmp_path))


def test_a_missing_ca_cert_is_named_with_the_host_never_the_token(tmp_path):
    missing = str(tmp_path / "ca.crt")
    message = connect_error(Login({"host": "https://api.unit.test:6443", "api_key": TOKEN, "ca_cert": missing}))
    assert message.startswith(
        "cannot read %s (No such file or directory), named by host https://api.unit.test:6443" % missing
    )


def test_the_environment_and_the_default_kubeconfig_are_named(monkeypatch):
    monkeypatch.setattr(core_client, "get_api_client", raising(CoreException("Invalid kube-config file.")))
    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", "/env/kc")
    monkeypatch.setenv("K8S_AUTH_CONTEXT", "ctx")
    assert connect_error(Login({})).startswith("cannot load the kubeconfig /env/kc with context ctx: ")
    monkeypatch.delenv("K8S_AUTH_KUBECONFIG")
    monkeypatch.delenv("K8S_AUTH_CONTEXT")
    assert connect_error(Login({})).startswith("cannot load the default kubeconfig (~/.kube/config) with its")
    monkeypatch.setenv("KUBECONFIG", "/a/kc")
    assert connect_error(Login({"kubeconfig": {"apiVersion": "v1"}})).startswith(
        "cannot load the kubeconfig given as a dict with its current-context"
    )
    assert connect_error(Login({})).startswith("cannot load the default kubeconfig (/a/kc) with its")


def test_an_unreachable_server_names_where_the_client_went(monkeypatch):
    pool = HTTPSConnectionPool("127.0.0.1", 1)
    refused = MaxRetryError(pool, "/version", NewConnectionError(None, "Connection refused"))
    monkeypatch.setattr(core_client, "get_api_client", raising(refused))
    message = connect_error(Login({"kubeconfig": "/k/kc"}))
    assert message.startswith("cannot reach the API server https://127.0.0.1:1 to get version: ")


def test_a_refused_token_at_discovery_is_a_401(monkeypatch):
    monkeypatch.setattr(core_client, "get_api_client", raising(DynamicApiError(ApiException(401, "Unauthorized"))))
    with pytest.raises(ApiAccessError) as caught:
        connect(Login({"host": "https://api.unit.test:6443", "api_key": TOKEN}))
    assert caught.value.status == 401
    assert "named by host https://api.unit.test:6443 rejected the credentials (401 Unauthorized)" in str(caught.value)


def test_other_errors_are_not_disguised(monkeypatch):
    monkeypatch.setattr(core_client, "get_api_client", raising(KeyError("bug")))
    with pytest.raises(KeyError):
        connect(Login({}))


def test_connect_returns_the_client_and_an_api_client(monkeypatch):
    class Dynamic:
        configuration = type("Configuration", (), {"host": "https://api.unit.test:6443"})()

    k8s = type("K8SClient", (), {"client": Dynamic()})()
    monkeypatch.setattr(core_client, "get_api_client", lambda module=None, **kwargs: k8s)
    client, api = connect(Login({}))
    assert client is k8s and isinstance(api, ApiClient)
    assert (api.api_url, api.calls) == ("https://api.unit.test:6443", 0)


class Response:
    def __init__(self, data):
        self.data = data


class FakeDynamic:
    """DynamicClient.request stand-in: answers by path, raises DynamicApiError for a status."""

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def request(self, method, path, body=None, serialize=True, **params):
        self.calls.append((method, path, body))
        answer = self.answers[path]
        if isinstance(answer, int):
            error = ApiException(answer, "Status %d" % answer)
            error.body = json.dumps({"message": "the server says %d" % answer})
            raise DynamicApiError(error)
        return Response(answer)


def test_api_client_gets_creates_deletes_and_counts():
    nodes, cm = core_target("nodes"), core_target("configmaps", "x", "ns")
    dynamic = FakeDynamic({nodes.path: b'{"items": []}', cm.path: 404, "/api/v1/namespaces/ns/configmaps": b"{}"})
    api = ApiClient(dynamic)
    assert api.get(nodes) == {"items": []}
    assert api.get(cm) is None
    assert api.request("GET", nodes, raw=True) == '{"items": []}'
    assert api.create(core_target("configmaps", namespace="ns", verb="create"), {"metadata": {}}) == {}
    assert api.delete(cm) is False
    with pytest.raises(ApiAccessError):
        api.delete(cm, missing_ok=False)
    assert api.calls == len(dynamic.calls) == 6
    assert dynamic.calls[-1][2]["propagationPolicy"] == "Background"


def test_a_forbidden_read_names_the_verb_the_resource_and_the_grant():
    target = group_target("config.openshift.io", "v1", "clusterversions", "version")
    with pytest.raises(ApiAccessError) as caught:
        ApiClient(FakeDynamic({target.path: 403})).get(target)
    assert caught.value.status == 403 and caught.value.target == target
    assert caught.value.message == (
        "permission denied (403 Forbidden) to get clusterversions.config.openshift.io version: the server says 403; "
        "grant verb 'get' on resource 'clusterversions' (apiGroup 'config.openshift.io') through a ClusterRole bound "
        "to this identity."
    )


def test_targets_and_queries():
    target = core_target("pods", "p", "ns")
    assert (target.path, target.verb, target.describe()) == (
        "/api/v1/namespaces/ns/pods/p",
        "get",
        "get pods p in namespace ns",
    )
    assert with_query(target, watch="true", limit=None).path == "/api/v1/namespaces/ns/pods/p?watch=true"
    assert with_query(target).path == target.path
    assert core_target("nodes") == Target("/api/v1/nodes", "list", "nodes")
