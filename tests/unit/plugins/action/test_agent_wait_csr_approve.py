# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The two faces of the engine, the action plugins agent_wait and csr_approve (controller code: ansible-test runs
it as such), and what they check before the loop starts: engine.options and engine.host_records.
"""

import datetime
import json
import types

import netaddr
import pytest
import yaml
from ansible.errors import AnsibleActionFail

from ansible_collections.openshift_agent.day2.plugins.action import agent_wait as agent_wait_action
from ansible_collections.openshift_agent.day2.plugins.action import csr_approve as csr_approve_action
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error, InputError
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import engine
from ansible_collections.openshift_agent.day2.plugins.modules import csr_approve as csr_approve_docs
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.agent_fakes import TOKEN, free_port
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.csr_fake_api import (
    CSRS,
    NODES,
    FakeApi,
    FakeClock,
    api_client,
    legit_client,
    node_object,
)

UTC = datetime.timezone.utc

# ================================================================ engine.options


def params(**overrides):
    values = {"wait_sleep": 5, "request_timeout": 5, "boot_timeout": 1800, "install_timeout": 5400}
    values.update(overrides)
    return values


@pytest.mark.parametrize(
    "option", ["settle_seconds", "wait_sleep", "request_timeout", "boot_timeout", "install_timeout"]
)
def test_the_waits_must_be_at_least_a_second(option):
    with pytest.raises(InputError, match="%s must be at least 1 second, got 0" % option):
        engine.options(params(**{option: 0}), "ready", {})


@pytest.mark.parametrize("option", ["max_failed_hosts", "clock_skew"])
def test_counts_cannot_be_negative(option):
    with pytest.raises(InputError, match="max_failed_hosts and clock_skew cannot be negative"):
        engine.options(params(**{option: -1}), "ready", {})


@pytest.mark.parametrize("grace, seconds", [(600, 600), ("10m", 600), ("90s", 90), ("0", 0), ("1h", 3600)])
def test_validation_grace_forms(grace, seconds):
    assert engine.options(params(validation_grace=grace), "ready", {}).validation_grace == seconds


def test_a_validation_grace_that_is_no_duration_is_refused():
    with pytest.raises(InputError, match="validation_grace: 'ten minutes' is not a duration"):
        engine.options(params(validation_grace="ten minutes"), "validated", {})


def test_the_options_keep_what_was_given_and_default_the_rest():
    chosen = engine.options(
        params(settle_seconds=30, max_failed_hosts=2, first_header="Authorization"), "validated", {}
    )
    assert (chosen.target, chosen.settle_seconds, chosen.max_failed_hosts) == ("validated", 30, 2)
    assert (chosen.first_header, chosen.clock_skew, chosen.join_timeout) == ("Authorization", 2, 1800)
    assert engine.options(params(first_header="auto"), "ready", {}).first_header is None


def test_without_the_environment_the_ports_are_the_agent_and_kubelet_ones():
    chosen = engine.options(params(agent_port=None, kubelet_port=None), "ready", {})
    assert (chosen.agent_port, chosen.kubelet_port) == (8090, 10250)


def test_the_ports_come_from_the_environment_when_the_task_does_not_give_them():
    environ = {"OPENSHIFT_AGENT_DAY2_AGENT_PORT": "18090", "OPENSHIFT_AGENT_DAY2_KUBELET_PORT": "20250"}
    chosen = engine.options(params(agent_port=None), "ready", environ)
    assert (chosen.agent_port, chosen.kubelet_port) == (18090, 20250)


def test_a_given_port_wins_over_the_environment():
    environ = {"OPENSHIFT_AGENT_DAY2_AGENT_PORT": "1", "OPENSHIFT_AGENT_DAY2_KUBELET_PORT": "2"}
    chosen = engine.options(params(agent_port=8091, kubelet_port=10251), "ready", environ)
    assert (chosen.agent_port, chosen.kubelet_port) == (8091, 10251)


@pytest.mark.parametrize("variable", ["OPENSHIFT_AGENT_DAY2_AGENT_PORT", "OPENSHIFT_AGENT_DAY2_KUBELET_PORT"])
def test_a_port_in_the_environment_that_is_no_number_fails_clearly(variable):
    with pytest.raises(InputError) as failure:
        engine.options(params(), "ready", {variable: "eighty"})
    assert "agent_port/kubelet_port: " in str(failure.value) and "'eighty'" in str(failure.value)
    assert "unset them or give agent_port and kubelet_port" in str(failure.value)


# ================================================================ engine.host_records


def host(name, address="127.0.111.20", **more):
    return dict({"name": name, "address": address}, **more)


@pytest.mark.parametrize(
    "hosts, fragments",
    [
        (
            [host("worker-*")],
            ["hosts[0] (worker-*): a wildcard in the name", "name every host, there is no approve-all"],
        ),
        ([host("worker-?")], ["hosts[0] (worker-?): a wildcard in the name"]),
        (
            [host("worker-0", addresses=["127.0.111.20", "not-an-ip", "10.1"])],
            ["hosts[0] (worker-0): addresses ['127.0.111.20', 'not-an-ip', '10.1'] must be IP addresses"],
        ),
        ([host("worker-0", address="worker-0.lab")], ["hosts[0] (worker-0): addresses ['worker-0.lab'] must be IP"]),
        ([host("worker-0"), host("Worker-0")], ["host worker-0 is listed twice; list every host once"]),
        ([host("  ")], ["hosts[0] (no name): expected name and address, found ['address', 'name']"]),
        ([{"name": "worker-0"}], ["hosts[0] (worker-0): expected name and address, found ['name']"]),
        ([], ["hosts is empty: give at least one {name, address}"]),
    ],
)
def test_host_records_refuse_bad_hosts_naming_host_field_value_and_fix(hosts, fragments):
    with pytest.raises(InputError) as failure:
        engine.host_records(hosts)
    for fragment in fragments:
        assert fragment in str(failure.value), str(failure.value)


def test_every_problem_is_listed_at_once():
    with pytest.raises(InputError) as failure:
        engine.host_records([host("worker-*"), host("worker-1"), host("worker-2", addresses=["x"])])
    message = str(failure.value)
    assert "hosts[0] (worker-*)" in message and "hosts[2] (worker-2)" in message
    assert "hosts[1]" not in message


def test_host_records_lowercase_the_names_and_keep_every_key():
    records = engine.host_records(
        [
            host("Worker-0", mac_address="52:54:00:00:00:20", labels={"a": "b"}),
            host("worker-1", address="127.0.111.21", addresses=["127.0.111.21", "fd00:0::21"]),
        ]
    )
    assert records[0] == {
        "name": "worker-0",
        "address": "127.0.111.20",
        "addresses": ["127.0.111.20"],  # default: the address its install is followed at
        "mac_address": "52:54:00:00:00:20",
        "labels": {"a": "b"},
        "installed_after": None,
    }
    assert records[1]["addresses"] == ["127.0.111.21", "fd00:0::21"]
    assert engine.Host(records[1], engine.Options(), datetime.datetime.now(UTC)).expected(0).addresses == frozenset(
        [netaddr.IPAddress("127.0.111.21"), netaddr.IPAddress("fd00::21")]
    )
    assert engine.host_records([host("worker-0", addresses=[])])[0]["addresses"] == ["127.0.111.20"]


def test_installed_after_is_parsed_per_host_and_checked():
    (record,) = engine.host_records([host("worker-0")], {"Worker-0": "2026-11-30T20:00:00.5+01:00"})
    assert record["installed_after"] == datetime.datetime(2026, 11, 30, 19, 0, 0, 500000, tzinfo=UTC)
    assert engine.host_records([host("worker-0")], {"worker-0": ""})[0]["installed_after"] is None
    with pytest.raises(InputError, match=r"installed_after\[worker-0\]: 'yesterday' is not an RFC 3339"):
        engine.host_records([host("worker-0")], {"worker-0": "yesterday"})
    with pytest.raises(InputError, match="installed_after names hosts that are not followed: worker-9"):
        engine.host_records([host("worker-0")], {"worker-9": "2026-11-30T20:00:00Z"})


# ================================================================ the action plugins


def action(cls, args, check_mode=False):
    task = types.SimpleNamespace(
        args=args, check_mode=check_mode, async_val=0, action=cls.NAME, diff=False, environment=None
    )
    connection = types.SimpleNamespace(_shell=types.SimpleNamespace(tmpdir="/nonexistent"))
    return cls(task, connection, None, None, None, None)


@pytest.fixture
def cluster(monkeypatch):
    """The cluster both faces connect to (the Login they pass is recorded)."""
    api = FakeApi(FakeClock())
    api.logins = []

    def connect(login):
        api.logins.append(login.params)
        return types.SimpleNamespace(client=api), api_client(api)

    monkeypatch.setattr(agent_wait_action, "connect", connect)
    return api


def nowhere():
    """A host whose agent and kubelet refuse the connection at once."""
    return {"name": "worker-0", "address": "127.0.1.250"}


def test_agent_wait_in_check_mode_reads_nothing(cluster, capsys):
    result = action(agent_wait_action.ActionModule, {"hosts": [nowhere()], "until": "validated"}, True).run(None, {})
    assert "failed" not in result and result["changed"] is False
    assert [(w["name"], w["until"]) for w in result["would_follow"]] == [("worker-0", "validated")]
    assert cluster.logins == [] and cluster.calls == []


def test_agent_wait_returns_one_snapshot_and_never_the_token(cluster, capsys):
    port = free_port()
    args = {"hosts": [nowhere()], "token": TOKEN, "wait": False, "agent_port": port, "kubelet_port": port}
    result = action(agent_wait_action.ActionModule, args).run(None, {})
    assert "failed" not in result and result["rounds"] == 1 and result["reached"] == []
    assert result["hosts"]["worker-0"]["agent"]["answered"] is False
    assert result["token_info"]["source"] == "option" and TOKEN not in json.dumps(result)
    assert cluster.logins == []  # a given token: the cluster is not needed
    assert "openshift_agent.day2.agent_wait: following 1 host(s): worker-0 (until rebooted)" in capsys.readouterr().out


def test_a_failure_names_the_face_and_keeps_the_partial_result(cluster, capsys):
    result = action(agent_wait_action.ActionModule, {"hosts": [nowhere()], "wait": False}).run(None, {})
    assert result["failed"] is True
    assert result["msg"].startswith("agent_wait: Secret openshift-config/agent-auth-token does not exist.")
    result = action(csr_approve_action.ActionModule, {"hosts": [nowhere()], "max_failed_hosts": -1}).run(None, {})
    assert result == {"failed": True, "msg": "csr_approve: max_failed_hosts and clock_skew cannot be negative"}


def test_an_unknown_option_is_refused_by_the_argument_spec(cluster):
    with pytest.raises(AnsibleActionFail, match="settle_seconds"):
        action(agent_wait_action.ActionModule, {"hosts": [nowhere()], "settle_seconds": 3}).run(None, {})


def test_csr_approve_in_check_mode_predicts_from_the_cluster(cluster, capsys):
    filed = datetime.datetime.now(UTC) - datetime.timedelta(minutes=1)  # the faces run on the real clock
    cluster.put_csr(legit_client("worker-0", created=filed))
    face = action(csr_approve_action.ActionModule, {"hosts": [nowhere()], "eject": ["worker-0"]}, True)
    face.hooks = lambda *args: pytest.fail("check mode needs no hooks")
    result = face.run(None, {})
    assert [w["name"] for w in result["would_approve"]] == ["worker-0.client"] and result["changed"] is True
    assert cluster.calls == [("GET", CSRS), ("GET", NODES)] and cluster.approval_log == []


def test_csr_approve_runs_the_loop_with_its_hooks(cluster, capsys):
    cluster.nodes["worker-0"] = node_object("worker-0", ready=True)
    port = free_port()
    args = {"hosts": [nowhere()], "token": TOKEN, "agent_port": port, "kubelet_port": port}
    face = action(csr_approve_action.ActionModule, args)
    result = face.run(None, {})
    assert "failed" not in result and result["joined"] == ["worker-0"] and result["changed"] is False
    assert cluster.logins[0]["hosts"] == [nowhere()]
    assert "summary worker-0: joined" in capsys.readouterr().out


def test_csr_approve_ejects_only_the_hosts_it_was_given(monkeypatch):
    face = action(csr_approve_action.ActionModule, {})
    records = [{"name": "Worker-0", "address": "a"}, {"name": "worker-1", "address": "b"}]
    asked = []
    monkeypatch.setattr(face, "_eject", lambda record, params, task_vars: asked.append(record) or "ejected")
    hooks = face.hooks({"hosts": records, "eject": ["WORKER-0"]}, {"hostvars": {}})
    assert hooks["still_wanted"]() is True  # the process that started the worker is still there
    assert hooks["on_disk_written"]("worker-0") == "ejected" and asked == [records[0]]
    assert set(face.hooks({"hosts": records, "eject": []}, {})) == {"still_wanted"}


def test_a_virtual_cd_that_is_not_ours_is_left_alone():
    face = action(csr_approve_action.ActionModule, {})
    assert face._eject(None, {}, {}) == "its virtual CD is not ours to eject (not booted through Redfish in this run)"


def test_the_eject_reaches_the_bmc_as_the_boot_did_and_names_an_agent_config_hosts_field_as_its_file_does():
    """plugin_utils/action.py ``bmc``: the login from the host's variables, the module run by this task, and a
    refusal of an agent-config host named as its file names it (bmc.address), as boot_hosts does."""
    face = action(csr_approve_action.ActionModule, {})
    called = []

    def execute_module(name, module_args=None, task_vars=None):
        called.append((name, module_args, task_vars))
        return {"failed": True, "msg": "connection refused"}

    face._execute_module = execute_module
    host = {
        "name": "worker-0",
        "bmc": {"bmc_base_url": "https://192.0.2.9", "bmc_system_path": ""},
        "bmc_username": "admin",
        "source": "/inventory/agent-config.yaml",
    }
    params = {"bmc_verify_certs": False, "bmc_ca_path": "/ca.pem", "redfish_timeout": 30}
    task_vars = {"hostvars": {"worker-0": {"bmc_password": "secret"}}}
    with pytest.raises(Day2Error) as caught:
        face._eject(host, params, task_vars)
    assert caught.value.message.startswith('host worker-0: field "bmc.address": the BMC at 192.0.2.9 refused')
    assert caught.value.message.endswith("in /inventory/agent-config.yaml")
    name, arguments, passed = called[0]
    assert name == "community.general.redfish_info" and passed is task_vars
    login = {k: arguments[k] for k in ("username", "password", "validate_certs", "ca_path", "timeout", "baseuri")}
    assert login == {
        "username": "admin", "password": "secret", "validate_certs": False, "ca_path": "/ca.pem", "timeout": 30,
        "baseuri": "192.0.2.9",
    }  # fmt: skip


def test_the_faces_take_the_engines_options_and_csr_approve_its_documented_eject_options():
    assert agent_wait_action.ActionModule.OPTIONS is engine.AGENT_WAIT_OPTIONS
    extra = {k: v for k, v in csr_approve_action.ActionModule.OPTIONS.items() if k not in engine.CSR_APPROVE_OPTIONS}
    assert {k: csr_approve_action.ActionModule.OPTIONS[k] for k in engine.CSR_APPROVE_OPTIONS} == (
        engine.CSR_APPROVE_OPTIONS
    )
    documented = yaml.safe_load(csr_approve_docs.DOCUMENTATION)["options"]
    assert sorted(extra) == ["bmc_ca_path", "bmc_verify_certs", "eject", "redfish_timeout"]
    for name, option in extra.items():
        doc = documented[name]
        assert (doc["type"], doc.get("default"), doc.get("elements")) == (
            option["type"],
            option.get("default"),
            option.get("elements"),
        ), name
