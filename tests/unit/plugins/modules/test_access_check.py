# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The access_check module: its argument spec and runs of main() against a fake API (the check is _check.access)."""

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.openshift_agent.day2.plugins.module_utils._check import access
from ansible_collections.openshift_agent.day2.plugins.modules import access_check
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.test_access import FakeApi


@pytest.fixture
def api(monkeypatch):
    fake = FakeApi()
    monkeypatch.setattr(access.k8s, "connect", lambda module: (None, fake))
    return fake


def run_main(args, capsys):
    with patch_module_args({"kubeconfig": "/nonexistent/kubeconfig", **args}), pytest.raises(SystemExit):
        access_check.main()
    return json.loads(capsys.readouterr().out)


def test_main_passes_when_everything_is_held(api, capsys):
    result = run_main({"release": "4.20.2"}, capsys)
    assert "failed" not in result and result["changed"] is False
    assert result["missing"] == [] and result["plan"] == ["gather", "image", "install", "join", "follow"]
    assert result["reviews"] == len(api.asked) > 30


def test_main_fails_with_the_missing_permissions(api, capsys):
    api.denied = {("update", "certificatesigningrequests/approval", "certificates.k8s.io", None, None)}
    result = run_main({"plan": ["join"]}, capsys)
    assert result["failed"] is True
    assert result["msg"].startswith(
        "access_check: the identity of the kubeconfig /nonexistent/kubeconfig with its current-context lacks 1 "
    )
    assert (
        "- update certificatesigningrequests/approval.certificates.k8s.io (cluster-wide): csr_approve" in result["msg"]
    )
    assert [entry["resource"] for entry in result["missing"]] == ["certificatesigningrequests/approval"]
    assert result["plan"] == ["join"]


def test_main_in_check_mode_asks_the_same(api, capsys):
    result = run_main({"plan": ["gather"], "_ansible_check_mode": True}, capsys)
    assert result["missing"] == [] and len(api.asked) == result["reviews"] > 10


def test_the_plan_is_checked_by_the_argument_spec(api, capsys):
    result = run_main({"plan": ["boot"]}, capsys)
    assert result["failed"] is True and "value of plan must be one or more of" in result["msg"]
    assert api.asked == []
