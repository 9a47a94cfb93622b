# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The agent_wait module: its argument spec (the port fallbacks) and runs of main() (the run is _install.wait)."""

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.openshift_agent.day2.plugins.modules import agent_wait
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


def run_main(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit):
        agent_wait.main()
    return json.loads(capsys.readouterr().out)


def test_main_returns_one_snapshot_without_changing_anything(lab, capsys):
    lab.agent(0, TO_REBOOT)
    result = run_main(
        {
            "hosts": [{"name": "worker-0", "address": lab.address(0)}],
            "token": TOKEN,
            "agent_port": lab.port,
            "wait": False,
        },
        capsys,
    )
    assert result["changed"] is False and "failed" not in result
    assert result["polls"] == 1 and result["requests"] == 2
    assert result["hosts"]["worker-0"]["status"] == "discovering"
    assert result["auth_header"] == result["hosts"]["worker-0"]["auth_header"] == "Watcher-Authorization"
    assert result["token_info"] == {
        "source": "option",
        "key": None,
        "persona": None,
        "expires": None,
        "cluster_version": None,
        "first_header": "Watcher-Authorization",
    }
    assert TOKEN not in json.dumps(result)


def test_main_in_check_mode_predicts_without_a_request(lab, capsys):
    agent = lab.agent(0, TO_REBOOT)
    result = run_main(
        {
            "hosts": [{"name": "worker-0", "address": lab.address(0)}],
            "agent_port": lab.port,
            "kubeconfig": "/nonexistent/kubeconfig",
            "_ansible_check_mode": True,
        },
        capsys,
    )
    assert result["changed"] is False and "failed" not in result and agent.requests == []
    assert [h["agent_url"] for h in result["would_follow"]] == [
        "http://%s:%d/api/assisted-install/v2" % (lab.address(0), lab.port)
    ]
    assert result["hosts"]["worker-0"]["phase"] == "waiting" and result["token_info"]["source"] == "secret"


def test_main_reports_the_header_that_worked_on_a_4_17_agent(lab, capsys):
    agent = lab.agent(0, TO_REBOOT)
    agent.header = USER
    token = jwt({"infra_env_id": "e", "exp": 1893456000})
    agent.token = token
    result = run_main(
        {
            "hosts": [{"name": "worker-0", "address": lab.address(0)}],
            "token": token,
            "agent_port": lab.port,
            "wait": False,
        },
        capsys,
    )
    assert "failed" not in result and result["requests"] == 2
    assert result["auth_header"] == "Authorization" and result["token_info"]["first_header"] == "Authorization"
    assert token not in json.dumps(result)


def test_main_fails_with_the_partial_result(lab, capsys):
    agent = lab.agent(0, TO_REBOOT)
    agent.token = "rotated"
    result = run_main(
        {"hosts": [{"name": "worker-0", "address": lab.address(0)}], "token": TOKEN, "agent_port": lab.port}, capsys
    )
    assert result["failed"] is True and result["changed"] is False
    assert result["msg"].startswith("agent_wait: host worker-0 (%s): the agent at" % lab.address(0))
    assert "refused the token: in Watcher-Authorization: HTTP 401" in result["msg"]
    assert "Rebuild the ISO with day2_iso (force: true)" in result["msg"]
    assert result["token_info"]["source"] == "option"
    assert result["hosts"]["worker-0"]["answered"] is True


def test_the_agent_port_comes_from_the_environment_when_not_given(lab, capsys, monkeypatch):
    lab.agent(0, TO_REBOOT)
    monkeypatch.setenv("OPENSHIFT_AGENT_DAY2_AGENT_PORT", str(lab.port))
    result = run_main(
        {"hosts": [{"name": "worker-0", "address": lab.address(0)}], "token": TOKEN, "wait": False}, capsys
    )
    assert "failed" not in result and result["hosts"]["worker-0"]["answered"] is True
    assert result["hosts"]["worker-0"]["status"] == "discovering"


def test_the_kubelet_port_comes_from_the_environment_when_not_given(lab, capsys, monkeypatch):
    lab.start_kubelet(0)  # no agent: the host rebooted from its disk
    monkeypatch.setenv("OPENSHIFT_AGENT_DAY2_AGENT_PORT", str(lab.port))
    monkeypatch.setenv("OPENSHIFT_AGENT_DAY2_KUBELET_PORT", str(lab.kubelet_port))
    result = run_main(
        {"hosts": [{"name": "worker-0", "address": lab.address(0)}], "token": TOKEN, "wait": False}, capsys
    )
    assert "failed" not in result
    assert result["hosts"]["worker-0"]["kubelet"] == "handshake" and result["hosts"]["worker-0"]["reached"] is True


def test_a_given_port_wins_over_the_environment(lab, capsys, monkeypatch):
    lab.agent(0, TO_REBOOT)
    monkeypatch.setenv("OPENSHIFT_AGENT_DAY2_AGENT_PORT", "1")
    result = run_main(
        {
            "hosts": [{"name": "worker-0", "address": lab.address(0)}],
            "token": TOKEN,
            "agent_port": lab.port,
            "wait": False,
        },
        capsys,
    )
    assert result["hosts"]["worker-0"]["answered"] is True


def test_without_the_environment_the_ports_are_the_agent_and_kubelet_ones(monkeypatch):
    monkeypatch.delenv("OPENSHIFT_AGENT_DAY2_AGENT_PORT", raising=False)
    monkeypatch.delenv("OPENSHIFT_AGENT_DAY2_KUBELET_PORT", raising=False)
    with patch_module_args({"hosts": [{"name": "a", "address": "192.0.2.1"}], "token": TOKEN}):
        module = agent_wait.AnsibleK8SModule(argument_spec=agent_wait.ARGUMENT_SPEC, check_k8s=False)
    assert module.params["agent_port"] == 8090 and module.params["kubelet_port"] == 10250


def test_a_port_in_the_environment_that_is_no_number_fails_clearly(capsys, monkeypatch):
    monkeypatch.setenv("OPENSHIFT_AGENT_DAY2_AGENT_PORT", "eighty")
    result = run_main({"hosts": [{"name": "a", "address": "192.0.2.1"}], "token": TOKEN}, capsys)
    assert result["failed"] is True and "agent_port" in result["msg"]
