# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""One run of agent_wait (``_install.wait``): input checks, the token from the Secret, the result and the failure."""

import base64
import json

import pytest
from ansible_collections.kubernetes.core.plugins.module_utils.k8s import client as k8s_client
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import ForbiddenError, NotFoundError

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error, InputError
from ansible_collections.openshift_agent.day2.plugins.module_utils._install import wait
from ansible_collections.openshift_agent.day2.plugins.module_utils._install.token import AgentTokenError
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.agent_fakes import (
    TO_REBOOT,
    TOKEN,
    USER,
    Lab,
)
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.test_agent_token import jwt


@pytest.fixture
def lab(tmp_path):
    created = Lab(tmp_path)
    yield created
    created.close()


def params(**overrides):
    values = {
        "hosts": [{"name": "a", "address": "127.0.1.1"}],
        "wait_sleep": 5,
        "request_timeout": 5,
        "wait_timeout": 3600,
        "validation_grace": 600,
    }
    values.update(overrides)
    return values


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"hosts": []}, "hosts is empty"),
        ({"hosts": [{"name": "a", "address": "x"}, {"name": "a", "address": "y"}]}, "repeated: a"),
        ({"wait_sleep": 0}, "wait_sleep must be at least 1 second"),
        ({"request_timeout": 0}, "request_timeout must be at least 1 second"),
        ({"wait_timeout": -1}, "wait_timeout cannot be negative"),
        ({"validation_grace": "ten minutes"}, "validation_grace: 'ten minutes' is not a duration"),
    ],
)
def test_check_inputs_rejects(overrides, message):
    with pytest.raises(InputError, match=message):
        wait.check_inputs(params(**overrides))


@pytest.mark.parametrize("grace, seconds", [(600, 600), ("10m", 600), ("90s", 90), ("0", 0)])
def test_validation_grace_forms(grace, seconds):
    assert wait.check_inputs(params(validation_grace=grace)) == seconds


class FakeResponse:
    def __init__(self, body):
        self.data = json.dumps(body).encode() if body is not None else b""


SECRET_PATH = "/api/v1/namespaces/openshift-config/secrets/agent-auth-token"
CV_PATH = "/apis/config.openshift.io/v1/clusterversions/version"


class FakeDynamicClient:
    """Answers the GETs of Secret openshift-config/agent-auth-token and ClusterVersion version by path."""

    def __init__(self, answers):
        self.answers = answers
        self.paths = []

    def request(self, method, path, body=None, serialize=False, **params):
        self.paths.append((method, path))
        answer = self.answers.get(path)
        if answer is None:
            raise NotFoundError(ApiException(status=404, reason="Not Found"))
        if isinstance(answer, int):
            raise ForbiddenError(ApiException(status=answer, reason="Forbidden"))
        return FakeResponse(answer)


class FakeModule:
    """What run() uses of AnsibleK8SModule: params, requires() and the no_log_values that hide() fills."""

    def __init__(self, check_mode=False, **params):
        self.params = params
        self.check_mode = check_mode
        self.required = []
        self.no_log_values = set()

    def requires(self, dependency):
        self.required.append(dependency)


def install_client(monkeypatch, secret, clusterversion=None):
    dynamic = FakeDynamicClient({SECRET_PATH: secret, CV_PATH: clusterversion})

    class Wrapper:
        client = dynamic

    monkeypatch.setattr(k8s_client, "get_api_client", lambda module=None: Wrapper())
    return dynamic


def secret_with(data):
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "agent-auth-token", "namespace": "openshift-config"},
        "data": data,
    }


def b64(text):
    return base64.b64encode(text.encode()).decode()


def test_the_token_and_the_version_come_from_the_cluster(monkeypatch):
    watcher = jwt({"auth_scheme": "watcherAuth", "exp": 1893456000})
    dynamic = install_client(
        monkeypatch,
        secret_with(
            {
                "agentAuthToken": b64(jwt({"auth_scheme": "agentAuth"})),
                "watcherAuthToken": b64(watcher + "\n"),
                "authTokenPublicKey": "cHVibGlj",
            }
        ),
        {"status": {"desired": {"version": "4.19.2"}}},
    )
    module = FakeModule()
    token, first, info, warnings = wait.choose_token(module, params(token=None))
    assert token.value == watcher and first == "Watcher-Authorization" and warnings == []
    assert info == {
        "source": "secret",
        "key": "watcherAuthToken",
        "persona": "watcherAuth",
        "expires": "2030-01-01T00:00:00Z",
        "cluster_version": "4.19.2",
        "first_header": "Watcher-Authorization",
    }
    assert module.required == ["kubernetes"]
    assert dynamic.paths == [("GET", SECRET_PATH), ("GET", CV_PATH)]


def test_a_4_17_cluster_gives_the_agent_token_in_authorization(monkeypatch):
    install_client(
        monkeypatch,
        secret_with({"agentAuthToken": b64(jwt({"infra_env_id": "e"})), "authTokenPublicKey": "cHVibGlj"}),
        {"status": {"history": [{"version": "4.17.3"}]}},
    )
    _token, first, info, _warnings = wait.choose_token(FakeModule(), params(token=None))
    assert first == "Authorization" and info["key"] == "agentAuthToken" and info["cluster_version"] == "4.17.3"


def test_a_forbidden_clusterversion_is_a_warning(monkeypatch):
    install_client(monkeypatch, secret_with({"agentAuthToken": b64("opaque")}), 403)
    _token, first, info, warnings = wait.choose_token(FakeModule(), params(token=None))
    assert first == "Watcher-Authorization" and info["cluster_version"] is None
    assert "cannot read the cluster's version" in warnings[0]


def test_a_given_token_reads_nothing(monkeypatch):
    dynamic = install_client(monkeypatch, None)
    module = FakeModule()
    token, first, info, _warnings = wait.choose_token(module, params(token="opaque"))
    assert token.value == "opaque" and first == "Watcher-Authorization" and info["source"] == "option"
    assert dynamic.paths == [] and module.required == []


@pytest.mark.parametrize(
    "secret, message",
    [
        (None, "does not exist. node-joiner creates it when it builds the ISO: build the ISO first"),
        (
            secret_with({"authTokenPublicKey": "cHVibGlj"}),
            "holds no readable \\*AuthToken key .keys: authTokenPublicKey",
        ),
        (secret_with({"agentAuthToken": "%%%not base64"}), "keys: agentAuthToken"),
    ],
)
def test_choose_token_explains_what_is_missing(monkeypatch, secret, message):
    install_client(monkeypatch, secret)
    with pytest.raises(AgentTokenError, match=message):
        wait.choose_token(FakeModule(), params(token=None))


def module_for(lab, **overrides):
    values = params(
        hosts=[{"name": "worker-0", "address": lab.address(0)}],
        token=TOKEN,
        until="rebooted",
        wait=False,
        agent_port=lab.port,
        kubelet_port=lab.kubelet_port,
        request_timeout=2,
        first_header="auto",
    )
    values.update(overrides)
    return FakeModule(**values)


def test_run_returns_the_snapshot_and_hides_the_token(lab):
    lab.agent(0, TO_REBOOT)
    module = module_for(lab)
    result = wait.run(module)
    assert result["changed"] is False and result["warnings"] == []
    assert result["polls"] == 1 and result["requests"] == 2
    assert result["hosts"]["worker-0"]["status"] == "discovering" and result["hosts"]["worker-0"]["reached"] is False
    assert (
        result["token_info"]["source"] == "option" and result["token_info"]["first_header"] == "Watcher-Authorization"
    )
    assert module.no_log_values == {TOKEN} and TOKEN not in json.dumps(result)


def test_run_hides_a_token_read_from_the_cluster_and_passes_the_warnings_on(lab, monkeypatch):
    agent = lab.agent(0, TO_REBOOT)
    agent.token = jwt({"auth_scheme": "watcherAuth"})
    install_client(monkeypatch, secret_with({"watcherAuthToken": b64(agent.token)}), 403)
    module = module_for(lab, token=None)
    result = wait.run(module)
    assert module.no_log_values == {agent.token} and module.required == ["kubernetes"]
    assert result["token_info"]["key"] == "watcherAuthToken" and result["auth_header"] == "Watcher-Authorization"
    assert len(result["warnings"]) == 1 and "cannot read the cluster's version" in result["warnings"][0]


def test_run_sends_the_token_first_in_the_header_asked_for(lab):
    agent = lab.agent(0, TO_REBOOT)
    agent.header = USER
    result = wait.run(module_for(lab, first_header=USER))
    assert result["token_info"]["first_header"] == USER and result["auth_header"] == USER
    assert agent.headers == [USER, USER] and result["hosts"]["worker-0"]["auth_refused"] is None


def test_run_fails_with_the_partial_result(lab):
    agent = lab.agent(0, TO_REBOOT)
    agent.token = "rotated"
    module = module_for(lab, wait=True)
    with pytest.raises(
        Day2Error, match=r"host worker-0 .*refused the token: in Watcher-Authorization: HTTP 401"
    ) as caught:
        wait.run(module)
    result = caught.value.result
    assert result["changed"] is False and result["token_info"]["source"] == "option"
    assert result["hosts"]["worker-0"]["answered"] is True and result["polls"] == 1
    assert module.no_log_values == {TOKEN} and TOKEN not in caught.value.message


def test_run_checks_the_inputs_before_reading_the_cluster(lab, monkeypatch):
    dynamic = install_client(monkeypatch, None)
    module = module_for(lab, token=None, wait_sleep=0)
    with pytest.raises(InputError, match="wait_sleep must be at least 1 second"):
        wait.run(module)
    assert dynamic.paths == [] and module.required == [] and module.no_log_values == set()


def test_check_mode_names_every_host_and_asks_no_one(lab, monkeypatch):
    """No Secret yet (a fresh setup): check mode reads no token, polls no agent, probes no kubelet."""
    agent = lab.agent(0, TO_REBOOT)
    dynamic = install_client(monkeypatch, None)
    hosts = [{"name": "worker-0", "address": lab.address(0)}, {"name": "worker-1", "address": "fd00::21"}]
    module = module_for(lab, hosts=hosts, token=None, wait=True, check_mode=True)
    result = wait.run(module)
    assert result["would_follow"] == [
        {
            "name": "worker-0",
            "address": lab.address(0),
            "agent_url": "http://%s:%d/api/assisted-install/v2" % (lab.address(0), lab.port),
            "kubelet": "%s:%d" % (lab.address(0), lab.kubelet_port),
            "until": "rebooted",
        },
        {
            "name": "worker-1",
            "address": "fd00::21",
            "agent_url": "http://[fd00::21]:%d/api/assisted-install/v2" % lab.port,
            "kubelet": "[fd00::21]:%d" % lab.kubelet_port,
            "until": "rebooted",
        },
    ]
    assert {name: (h["phase"], h["answered"], h["timeline"]) for name, h in result["hosts"].items()} == {
        "worker-0": ("waiting", False, []),
        "worker-1": ("waiting", False, []),
    }
    assert (result["changed"], result["requests"], result["polls"], result["auth_header"]) == (False, 0, 0, None)
    assert result["token_info"]["source"] == "secret" and result["token_info"]["first_header"] is None
    assert dynamic.paths == [] and module.required == [] and agent.requests == [] and module.no_log_values == set()


def test_check_mode_still_refuses_bad_inputs(lab):
    with pytest.raises(InputError, match="wait_sleep must be at least 1 second"):
        wait.run(module_for(lab, wait_sleep=0, check_mode=True))
    result = wait.run(module_for(lab, check_mode=True, first_header=USER))
    assert result["token_info"] == {
        "source": "option",
        "key": None,
        "persona": None,
        "expires": None,
        "cluster_version": None,
        "first_header": USER,
    }
