# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The agent_wait module: input checks, the token from the Secret, and one run of main()."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json

import pytest
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import NotFoundError

from ansible.module_utils.testing import patch_module_args

from ansible_collections.kubernetes.core.plugins.module_utils.k8s import client as k8s_client
from ansible_collections.openshift_agent.day2.plugins.modules import agent_wait
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.test_agent_client import (
    TO_REBOOT,
    TOKEN,
    Lab,
)


@pytest.fixture
def lab(tmp_path):
    created = Lab(tmp_path)
    yield created
    created.close()


def params(**overrides):
    values = {"hosts": [{"name": "a", "address": "127.0.1.1"}], "wait_sleep": 5, "request_timeout": 5,
              "wait_timeout": 3600, "validation_grace": 600}
    values.update(overrides)
    return values


@pytest.mark.parametrize("overrides, message", [
    ({"hosts": []}, "hosts is empty"),
    ({"hosts": [{"name": "a", "address": "x"}, {"name": "a", "address": "y"}]}, "repeated: a"),
    ({"wait_sleep": 0}, "wait_sleep must be at least 1 second"),
    ({"request_timeout": 0}, "request_timeout must be at least 1 second"),
    ({"wait_timeout": -1}, "wait_timeout cannot be negative"),
    ({"validation_grace": "ten minutes"}, "validation_grace: 'ten minutes' is not a duration"),
])
def test_check_inputs_rejects(overrides, message):
    with pytest.raises(agent_wait.InputError, match=message):
        agent_wait.check_inputs(params(**overrides))


@pytest.mark.parametrize("grace, seconds", [(600, 600), ("10m", 600), ("90s", 90), ("0", 0)])
def test_validation_grace_forms(grace, seconds):
    assert agent_wait.check_inputs(params(validation_grace=grace)) == seconds


class FakeResponse:
    def __init__(self, body):
        self.data = json.dumps(body).encode() if body is not None else b""


class FakeDynamicClient:
    """Answers the one GET of Secret openshift-config/agent-auth-token."""

    def __init__(self, secret):
        self.secret = secret
        self.paths = []

    def request(self, method, path, body=None, serialize=False, **params):
        self.paths.append((method, path))
        if self.secret is None:
            raise NotFoundError(ApiException(status=404, reason="Not Found"))
        return FakeResponse(self.secret)


class FakeModule:
    def __init__(self):
        self.required = []

    def requires(self, dependency):
        self.required.append(dependency)


def install_client(monkeypatch, secret):
    dynamic = FakeDynamicClient(secret)

    class Wrapper:
        client = dynamic

    monkeypatch.setattr(k8s_client, "get_api_client", lambda module=None: Wrapper())
    return dynamic


def secret_with(data):
    return {"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "agent-auth-token", "namespace": "openshift-config"}, "data": data}


def test_read_token_decodes_the_secret(monkeypatch):
    dynamic = install_client(monkeypatch, secret_with({
        "agentAuthToken": base64.b64encode(b"eyJhbGciOiJFUzI1NiJ9.claims.sig\n").decode(),
        "authTokenPublicKey": "cHVibGlj"}))
    module = FakeModule()
    assert agent_wait.read_token(module) == "eyJhbGciOiJFUzI1NiJ9.claims.sig"
    assert module.required == ["kubernetes"]
    assert dynamic.paths == [("GET", "/api/v1/namespaces/openshift-config/secrets/agent-auth-token")]


@pytest.mark.parametrize("secret, message", [
    (None, "does not exist. node-joiner creates it when it builds the ISO: run day2_iso first, or pass token"),
    (secret_with({"authTokenPublicKey": "cHVibGlj"}), "has no key agentAuthToken"),
    (secret_with({"agentAuthToken": "%%%not base64"}), "is not base64 text"),
])
def test_read_token_explains_what_is_missing(monkeypatch, secret, message):
    install_client(monkeypatch, secret)
    with pytest.raises(agent_wait.InputError, match=message):
        agent_wait.read_token(FakeModule())


def run_main(args, capsys):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            agent_wait.main()
    return json.loads(capsys.readouterr().out)


def test_main_returns_one_snapshot_without_changing_anything(lab, capsys):
    lab.agent(0, TO_REBOOT)
    result = run_main({"hosts": [{"name": "worker-0", "address": lab.address(0)}], "token": TOKEN,
                       "agent_port": lab.port, "wait": False, "_ansible_check_mode": True}, capsys)
    assert result["changed"] is False and "failed" not in result
    assert result["polls"] == 1 and result["requests"] == 2
    assert result["hosts"]["worker-0"]["status"] == "discovering"
    assert TOKEN not in json.dumps(result)


def test_main_fails_with_the_partial_result(lab, capsys):
    agent = lab.agent(0, TO_REBOOT)
    agent.token = "rotated"
    result = run_main({"hosts": [{"name": "worker-0", "address": lab.address(0)}], "token": TOKEN,
                       "agent_port": lab.port}, capsys)
    assert result["failed"] is True and result["changed"] is False
    assert result["msg"].startswith("agent_wait: host worker-0 (%s): the agent at" % lab.address(0))
    assert "rebuild the ISO" in result["msg"]
    assert result["hosts"]["worker-0"]["answered"] is True
