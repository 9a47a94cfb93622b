# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The one engine behind agent_wait and csr_approve (plugins/module_utils/_join/engine.py).

The pure parts (node_patch, decide, Host), the cluster through the collection's real ApiClient over a fake API
server (Cluster: approve after a fresh GET, mark with the resourceVersion guard), the loop on a fake clock with
scripted agents (csr_approve's and agent_wait's runs, the timeouts of each host, check mode predicting what the
loop approves) and follow(), the entry point of both action plugins. Nothing really sleeps: the clock is
injected and advances when the loop sleeps. The options and hosts checks are tested with the action plugins
(tests/unit/plugins/action/test_agent_wait_csr_approve.py).
"""

import copy
import datetime
import json
import types

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error, InputError
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import ApiAccessError
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.net import parse_ip
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.health import (
    health,
    never_ready,
    node_summary,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import cluster as join_cluster
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import csr as policy
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import engine
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.token import AgentTokenError
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils import csr_factory as f
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.agent_fakes import (
    EXP,
    TO_REBOOT,
    TOKEN,
    USER,
    WATCHER,
    Lab,
    jwt,
    secret,
)
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.csr_factory import (
    HOUR,
    NOW,
    SECOND,
    client_csr,
    names,
    serving_csr,
)
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.csr_fake_api import (
    CSRS,
    IPS,
    KUBELET,
    KUBELET_NO_CERT,
    MINUTE,
    NODES,
    SILENT,
    FakeApi,
    FakeClock,
    Poller,
    answered,
    api_client,
    hosts,
    join_run,
    legit_client,
    node_object,
    run_to_end,
    stamp,
)

APPROVED = ["Approved"]
NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule", "timeAdded": "2025-01-01T00:00:00Z"}
INFRA = {"node-role.kubernetes.io/infra": ""}
DEDICATED = [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]


def at(seconds):
    return stamp(NOW + datetime.timedelta(seconds=seconds))


# ================================================================ node_patch: labels and taints


def node(labels=None, taints=None, rv="42"):
    return {
        "metadata": {"name": "w", "resourceVersion": rv, "labels": dict(labels or {"kubernetes.io/hostname": "w"})},
        "spec": {"taints": list(taints)} if taints is not None else {},
    }


def apply(obj, patch):
    """RFC 7386, as the API server applies it (enough for these objects)."""
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(obj.get(key), dict):
            apply(obj[key], value)
        else:
            obj[key] = value
    return obj


def test_labels_only_the_missing_ones_then_nothing():
    registered = node(labels={"kubernetes.io/hostname": "w", "zone": "old"})
    patch = join_cluster.node_patch(registered, {"zone": "a", "node-role.kubernetes.io/infra": ""}, [])
    assert patch == {"metadata": {"labels": {"zone": "a", "node-role.kubernetes.io/infra": ""}}}
    assert "resourceVersion" not in patch["metadata"]  # a label merge cannot undo anyone's change
    assert (
        join_cluster.node_patch(apply(registered, patch), {"zone": "a", "node-role.kubernetes.io/infra": ""}, [])
        is None
    )


def test_taints_keep_the_controllers_and_carry_the_resource_version():
    registered = node(taints=[NOT_READY])
    patch = join_cluster.node_patch(registered, {}, DEDICATED)
    assert patch == {"metadata": {"resourceVersion": "42"}, "spec": {"taints": [NOT_READY, *DEDICATED]}}
    marked = apply(registered, patch)
    assert join_cluster.node_patch(marked, {}, DEDICATED) is None
    # the controller removes its taint when the Node is Ready: still nothing to do
    marked["spec"]["taints"] = copy.deepcopy(DEDICATED)
    assert join_cluster.node_patch(marked, {}, DEDICATED) is None


def test_a_key_given_gets_exactly_the_given_taints():
    current = [{"key": "dedicated", "value": "infra", "effect": "NoExecute"}, NOT_READY]
    assert join_cluster.node_patch(node(taints=current), {}, DEDICATED)["spec"]["taints"] == [NOT_READY, *DEDICATED]
    same = [{"key": "dedicated", "value": "infra", "effect": "NoExecute"}]
    assert join_cluster.node_patch(node(taints=current[:1]), {}, same) is None
    # a Node without spec.taints, and a value left out equals an empty one
    assert join_cluster.node_patch(node(), {}, [{"key": "gpu", "effect": "NoSchedule"}])["spec"]["taints"] == [
        {"key": "gpu", "effect": "NoSchedule"}
    ]
    empty_value = node(taints=[{"key": "gpu", "value": "", "effect": "NoSchedule"}])
    assert join_cluster.node_patch(empty_value, {}, [{"key": "gpu", "effect": "NoSchedule"}]) is None
    # two taints of one key replace the one the Node has
    two = [{"key": "dedicated", "value": "a", "effect": "NoSchedule"}, {"key": "dedicated", "effect": "NoExecute"}]
    assert join_cluster.node_patch(node(taints=DEDICATED), {}, two)["spec"]["taints"] == [
        {"key": "dedicated", "value": "a", "effect": "NoSchedule"},
        {"key": "dedicated", "effect": "NoExecute"},
    ]


def test_both_and_neither():
    patch = join_cluster.node_patch(node(), {"zone": "a"}, [{"key": "gpu", "effect": "NoSchedule"}])
    assert patch["metadata"] == {"labels": {"zone": "a"}, "resourceVersion": "42"}
    assert join_cluster.node_patch(node(), {}, []) is None


def test_describe_marks():
    assert engine.describe_marks({"zone": "a", "b": ""}, [*DEDICATED, {"key": "gpu", "effect": "NoExecute"}]) == (
        "labels b=, zone=a; taints dedicated=infra:NoSchedule, gpu:NoExecute"
    )
    assert engine.describe_marks({}, []) == ""


# ================================================================ decide: the one decision


def sorted_for(objs, host, **kwargs):
    return f.sort_host(objs, host, **kwargs)


def test_decide_approves_the_kubelets_client_csrs_only_once_it_rebooted_and_settled():
    keys = sorted_for([client_csr("worker-0", name="mine")], "worker-0")
    assert names(engine.decide(keys, None, True, True)) == ["mine"]
    assert engine.decide(keys, None, False, True) == []
    assert engine.decide(keys, None, True, False) == []


def test_decide_approves_no_second_client_certificate():
    key = f.make_key()
    approved = client_csr("worker-0", key=key, name="first", created=NOW - 30 * MINUTE, conditions=APPROVED)
    again = client_csr("worker-0", key=key, name="again", created=NOW - MINUTE)
    keys = sorted_for([approved, again], "worker-0")
    assert names(keys.client) == ["again"]  # the kubelet's key ...
    assert engine.decide(keys, None, True, True) == []  # ... but its certificate is issued already
    registered = node_object("worker-0")
    assert engine.decide(sorted_for([again], "worker-0"), registered, True, True) == []  # its Node exists


def test_decide_approves_the_serving_csr_once_the_client_certificate_is_issued():
    serving = serving_csr("worker-1", ips=["127.0.111.21"], name="serving")
    client = client_csr("worker-1", name="client", conditions=APPROVED)
    assert engine.decide(sorted_for([serving], "worker-1"), None, True, True) == []
    assert names(engine.decide(sorted_for([serving, client], "worker-1"), None, False, False)) == ["serving"]
    assert names(engine.decide(sorted_for([serving], "worker-1"), node_object("worker-1"), False, False)) == ["serving"]


def cluster_decision(objs, nodes):
    """What the loop would approve for every host of csr_factory's EXPECTED on this state (flood guard first)."""
    csrs = [policy.parse_csr(obj) for obj in objs]
    ctx = f.context()
    if policy.flood(csrs, frozenset(ctx.expected), ctx.now) is not None:
        return []
    return sorted(
        str(c.name)
        for name in ctx.expected
        for c in engine.decide(policy.host_csrs(csrs, ctx, name), nodes.get(name), True, True)
    )


def test_a_cluster_full_of_rogues_gets_exactly_the_genuine_csrs_approved():
    objs = [
        client_csr("worker-0", name="genuine-client-0"),
        serving_csr("worker-1", ips=["127.0.111.21"], dns=["worker-1"], name="genuine-serving-1"),
        client_csr("intruder-7", name="rogue-unknown"),
        client_csr("master-0", name="rogue-existing"),
        client_csr("worker-1", name="rogue-extra-group", groups=[*f.BOOTSTRAP_GROUPS, "system:masters"]),
        client_csr("worker-1", name="rogue-san", dns=["worker-1"]),
        serving_csr("worker-0", ips=["127.0.111.10"], name="rogue-foreign-ip"),
        serving_csr("worker-0", ips=["127.0.111.20"], username="system:node:worker-1", name="rogue-username"),
        client_csr("worker-1", name="rogue-signer", signer="kubernetes.io/kube-apiserver-client"),
        client_csr("worker-1", name="rogue-tampered", tamper=True),
        client_csr("worker-1", name="rogue-rsa", key=f.make_key("rsa2048")),
        client_csr("worker-2", name="rogue-old-life", created=NOW - 2 * HOUR),
    ]
    assert cluster_decision(objs, {"worker-1": node_object("worker-1")}) == ["genuine-client-0", "genuine-serving-1"]


def test_a_flood_stops_every_approval():
    objs = [client_csr("worker-1", name="flood-%02d" % i, created=NOW - i * MINUTE) for i in range(12)]
    assert cluster_decision([client_csr("worker-0", name="genuine"), *objs[:9]], {}) == ["genuine"]
    assert cluster_decision([client_csr("worker-0", name="genuine"), *objs], {}) == []


# ================================================================ Host


def one_host(record, **options):
    return engine.Host(engine.host_records([record])[0], engine.Options(**options), NOW)


def test_not_before_is_the_later_of_installed_after_and_the_agents_last_answer():
    host = engine.Host(
        dict(hosts("worker-0")[0], addresses=[IPS["worker-0"]], installed_after=None), engine.Options(), NOW
    )
    assert host.expected(0.0).not_before is None
    record = engine.host_records(hosts("worker-0"), {"worker-0": stamp(NOW - 5 * MINUTE)})[0]
    host = engine.Host(record, engine.Options(), NOW)
    assert host.expected(3.0).not_before == NOW - 5 * MINUTE + 3 * SECOND  # in the API server's clock
    host.progress.last_answer = NOW - MINUTE
    assert host.expected(0.0).not_before == NOW - MINUTE
    host.progress.last_answer = NOW - 10 * MINUTE
    assert host.expected(0.0).not_before == NOW - 5 * MINUTE


def test_the_host_as_the_policy_sees_it():
    host = one_host({"name": "Worker-1", "address": "127.0.111.21", "addresses": ["127.0.111.21", "fd00:0::21"]})
    expected = host.expected(0.0)
    assert (expected.name, expected.dns_names) == ("worker-1", frozenset())
    assert expected.addresses == frozenset([parse_ip("127.0.111.21"), parse_ip("fd00::21")])
    assert host.phase == engine.WAITING and host.marked  # nothing to set on its Node


def test_the_marks_of_a_host_come_from_its_record():
    assert (one_host(dict(hosts("worker-0")[0], labels=INFRA, taints=DEDICATED)).labels) == INFRA
    host = one_host(dict(hosts("worker-0")[0], node_labels={"a": "b"}, node_taints=DEDICATED))
    assert (host.labels, host.taints, host.marked) == ({"a": "b"}, DEDICATED, False)
    joined = one_host(dict(hosts("worker-0")[0], state="joined"))
    assert joined.phase == engine.JOINED and joined.done


def test_the_old_installations_approved_csr_is_not_the_kubelets_key():
    old = client_csr("worker-0", name="old", created=NOW - 30 * MINUTE, conditions=APPROVED)
    new = client_csr("worker-0", name="new", created=NOW - MINUTE)
    record = engine.host_records(hosts("worker-0"), {"worker-0": stamp(NOW - 10 * MINUTE)})[0]
    expected = engine.Host(record, engine.Options(), NOW).expected(0.0)
    ctx = policy.Context({"worker-0": expected}, frozenset(), NOW, 2 * SECOND)
    keys = policy.host_csrs([policy.parse_csr(obj) for obj in (old, new)], ctx, "worker-0")
    assert keys.problem("worker-0") is None and keys.approved == []
    assert names(keys.client) == ["new"] and set(keys.refused) == {"old"}


# ================================================================ Cluster: the API server, read fresh


def cluster_over(api, attempts=3):
    return join_cluster.Cluster(api_client(api, attempts), api)


def csr_path(name, approval=False):
    return "%s/%s%s" % (CSRS, name, "/approval" if approval else "")


def test_an_approval_is_the_fresh_object_plus_an_approved_condition():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")])
    listed = copy.deepcopy(api.csrs["worker-0.client"])
    assert cluster_over(api).approve(listed, "Approved by test", NOW) is True
    assert api.calls == [("GET", csr_path("worker-0.client")), ("PUT", csr_path("worker-0.client", True))]
    body = api.approval_bodies[0]
    assert body["status"]["conditions"] == [
        {
            "type": "Approved",
            "status": "True",
            "reason": "OpenshiftAgentDay2Approved",
            "message": "Approved by test",
            "lastUpdateTime": stamp(NOW),
        }
    ]
    body["status"].pop("conditions")
    assert body == listed  # everything else, resourceVersion included, is the object as read
    assert policy.parse_csr(api.csrs["worker-0.client"]).state == policy.APPROVED


def changed_meanwhile(name, how):
    """A failure-queue step: someone changes CSR ``name`` right before our GET."""

    def change(api):
        obj = copy.deepcopy(api.csrs[name])
        if how == "approved":
            obj["status"] = {"conditions": [{"type": "Approved", "status": "True"}]}
        elif how == "denied":
            obj["status"] = {"conditions": [{"type": "Denied", "status": "True"}]}
        elif how == "replaced":
            obj["spec"] = legit_client("worker-0")["spec"]  # same name, another request
        else:
            api.csrs.pop(name)
            return
        api.put_csr(obj)

    return change


@pytest.mark.parametrize("how", ["approved", "denied", "replaced", "deleted"])
def test_a_csr_that_changed_or_is_no_longer_pending_after_the_list_is_never_approved(how):
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")])
    listed = copy.deepcopy(api.csrs["worker-0.client"])
    api.fail("GET", "csr", changed_meanwhile("worker-0.client", how))
    assert cluster_over(api).approve(listed, "m", NOW) is False
    assert api.count("PUT") == 0 and api.approval_log == []


def bump(name):
    """Someone else updates CSR ``name`` right before our PUT: it carries a stale resourceVersion."""
    return lambda api: api.put_csr(api.csrs[name])


def test_a_409_is_retried_after_a_fresh_get():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")])
    listed = copy.deepcopy(api.csrs["worker-0.client"])
    api.fail("PUT", "approval", bump("worker-0.client"), bump("worker-0.client"))
    assert cluster_over(api).approve(listed, "m", NOW) is True
    get, put = ("GET", csr_path("worker-0.client")), ("PUT", csr_path("worker-0.client", True))
    assert api.calls == [get, put, get, put, get, put]
    assert api.approval_log == ["worker-0.client"]
    stale, fresh = api.approval_bodies[0], api.approval_bodies[-1]
    assert int(fresh["metadata"]["resourceVersion"]) > int(stale["metadata"]["resourceVersion"])


@pytest.mark.parametrize("how", ["approved", "replaced"])
def test_after_a_409_the_fresh_object_is_decided_again(how):
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")])
    listed = copy.deepcopy(api.csrs["worker-0.client"])
    api.fail("PUT", "approval", changed_meanwhile("worker-0.client", how))
    assert cluster_over(api).approve(listed, "m", NOW) is False
    assert api.approval_log == [] and api.count("PUT") == 1 and api.count("GET") == 2


def test_endless_409s_end_in_the_conflict():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")])
    api.fail("PUT", "approval", *[bump("worker-0.client")] * 3)
    with pytest.raises(ApiAccessError) as failure:
        cluster_over(api).approve(copy.deepcopy(api.csrs["worker-0.client"]), "m", NOW)
    assert failure.value.status == 409 and api.count("PUT") == 3 and api.approval_log == []


def test_mark_sends_only_the_missing_labels_without_a_guard_then_nothing():
    clock = FakeClock()
    api = FakeApi(clock, nodes=[node_object("worker-0", ready=True)])
    cluster = cluster_over(api)
    assert cluster.mark("worker-0", INFRA, []) is True
    assert api.patches == [("worker-0", {"metadata": {"labels": INFRA}})]
    assert api.nodes["worker-0"]["metadata"]["labels"] == {"kubernetes.io/hostname": "worker-0", **INFRA}
    assert cluster.mark("worker-0", INFRA, []) is False and len(api.patches) == 1
    assert cluster.mark("worker-9", INFRA, []) is False  # no such Node: nothing to patch


def test_mark_guards_a_taint_change_with_the_resource_version_and_reads_again_after_a_409():
    clock = FakeClock()
    api = FakeApi(clock, nodes=[node_object("worker-0", taints=[])])
    read = api.nodes["worker-0"]["metadata"]["resourceVersion"]

    def controller_taints(fake):
        changed = copy.deepcopy(fake.nodes["worker-0"])
        changed["spec"]["taints"] = [NOT_READY]
        fake.put_node(changed)

    api.fail("PATCH", "node", controller_taints)  # between our GET and our PATCH
    assert cluster_over(api).mark("worker-0", INFRA, DEDICATED) is True
    node_path = "%s/worker-0" % NODES
    assert api.calls == [("GET", node_path), ("PATCH", node_path), ("GET", node_path), ("PATCH", node_path)]
    ((name, patch),) = api.patches  # the first PATCH was refused with 409
    assert name == "worker-0" and patch["metadata"]["resourceVersion"] != read
    assert api.nodes["worker-0"]["spec"]["taints"] == [NOT_READY, *DEDICATED]  # the controller's taint is kept
    assert api.nodes["worker-0"]["metadata"]["labels"]["node-role.kubernetes.io/infra"] == ""


def test_mark_sent_nothing_when_someone_else_set_the_marks_meanwhile():
    clock = FakeClock()
    api = FakeApi(clock, nodes=[node_object("worker-0", taints=[])])

    def someone_marks(fake):
        changed = copy.deepcopy(fake.nodes["worker-0"])
        changed["metadata"]["labels"].update(INFRA)
        changed["spec"]["taints"] = copy.deepcopy(DEDICATED)
        fake.put_node(changed)

    api.fail("PATCH", "node", someone_marks)  # our PATCH then carries a stale resourceVersion: 409
    assert cluster_over(api).mark("worker-0", INFRA, DEDICATED) is False
    assert api.patches == [] and api.count("PATCH") == 1 and api.count("GET") == 2


def test_csrs_and_nodes_are_read_in_one_list_each():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")], nodes=[node_object("worker-0")])
    cluster = cluster_over(api)
    assert [o["metadata"]["name"] for o in cluster.csrs()] == ["worker-0.client"]
    assert sorted(cluster.nodes()) == ["master-0", "master-1", "master-2", "worker-0"]
    assert api.calls == [("GET", CSRS), ("GET", NODES)]


def test_the_server_clock_offset_comes_from_the_date_header(monkeypatch):
    monkeypatch.setattr(join_cluster, "time", types.SimpleNamespace(time=lambda: 1000.0))
    api = FakeApi(FakeClock(), server_date=1100)
    assert cluster_over(api).server_offset() == 100.5  # the header has whole seconds
    assert cluster_over(FakeApi(FakeClock())).server_offset() is None


# ================================================================ the csr_approve loop


def test_approves_exactly_the_new_hosts_csrs_and_waits_until_ready():
    clock = FakeClock()
    rogues = [
        client_csr("intruder", name="rogue.unknown-host"),
        client_csr("master-0", name="rogue.existing-node"),
        client_csr("worker-1", name="rogue.bad-username", username="system:anonymous", created=NOW - 2 * MINUTE),
        serving_csr("worker-0", ips=["10.9.9.9"], name="rogue.foreign-ip"),
    ]
    api = FakeApi(clock, [legit_client("worker-0"), legit_client("worker-1"), *rogues], kubelet=True)
    lines = []
    result, failure = run_to_end(join_run(api, clock, hosts("worker-0", "worker-1"), lines=lines))
    assert failure is None
    assert sorted(api.approval_log) == ["worker-0.client", "worker-0.serving", "worker-1.client", "worker-1.serving"]
    assert result["changed"] is True and result["joined"] == ["worker-0", "worker-1"] and result["failed_hosts"] == []
    assert result["approved"][:2] == [
        {"name": "worker-0.client", "node": "worker-0", "kind": "client", "approved_at": at(10)},
        {"name": "worker-1.client", "node": "worker-1", "kind": "client", "approved_at": at(10)},
    ]
    assert (result["rounds"], result["duration"], result["api_errors"]) == (5, 20.0, 0)
    entry = result["hosts"]["worker-0"]
    assert (entry["state"], entry["rebooted_by"], entry["problem"]) == (
        "joined",
        "its kubelet answers (handshake)",
        None,
    )
    assert entry["phases"] == {"waiting": 0.0, "rebooted": 0.0, "settling": 15.0, "half-joined": 5.0}
    assert [a["name"] for a in entry["approved"]] == ["worker-0.client", "worker-0.serving"]
    assert "%s worker-0: approved its client certificate request worker-0.client" % at(10) in lines
    assert "%s worker-0: approved its serving certificate request worker-0.serving" % at(15) in lines
    assert (
        "summary worker-0: joined (waiting 0.0s, rebooted 0.0s, settling 15.0s, half-joined 5.0s); approved in "
        "this run: client worker-0.client, serving worker-0.serving" in lines
    )
    body = api.approval_bodies[0]["status"]["conditions"][-1]
    assert body["message"] == (
        "Approved by openshift_agent.day2.csr_approve: client CSR of new host worker-0 (kubelet answered, one public "
        "key)"
    )


@pytest.mark.parametrize("settle", [10, 30])
def test_the_first_approval_waits_for_the_settle_period_after_the_kubelet_answered(settle):
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")], kubelet=True)
    lines = []
    polls = {"worker-0": Poller(SILENT, KUBELET)}  # its kubelet answers in round 2 (5 s)
    result, _failure = run_to_end(join_run(api, clock, hosts("worker-0"), polls, lines, settle_seconds=settle))
    assert result["approved"][0]["approved_at"] == at(5 + settle)
    assert (
        "%s worker-0: settling; its kubelet answers; its client certificate is approved at %s, unless a certificate "
        "request from another key names this host first (that would stop it)" % (at(5), at(5 + settle)) in lines
    )
    assert result["hosts"]["worker-0"]["phase_started"]["rebooted"] == at(5)


def test_a_client_csr_waits_for_the_kubelet_to_answer():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")], kubelet=True)
    lines = []
    installing = answered("installing-in-progress", "Writing image to disk", 50)
    polls = {"worker-0": Poller(installing, installing, installing, KUBELET)}
    result, _failure = run_to_end(join_run(api, clock, hosts("worker-0"), polls, lines, clock_skew=600))
    assert result["approved"][0] == {
        "name": "worker-0.client",
        "node": "worker-0",
        "kind": "client",
        "approved_at": at(25),  # the kubelet answered at 15 s, then 10 s to settle
    }
    waiting = "its certificate request worker-0.client waits until its kubelet answers on the installed system"
    assert (
        "%s worker-0: installing; agent: installing-in-progress at Writing image to disk (50%%); %s" % (at(0), waiting)
        in lines
    )


def test_a_csr_created_before_the_live_isos_agent_last_answered_is_not_the_installed_systems():
    clock = FakeClock()
    stale = legit_client("worker-0", name="worker-0.stale", created=NOW - 5 * MINUTE)
    api = FakeApi(clock, [stale], kubelet=True)
    installing = answered("installing-in-progress", "Writing image to disk", 90)
    polls = {"worker-0": Poller(installing, installing, KUBELET)}  # the agent last answers at 5 s
    clock.at_round(6, lambda: api.put_csr(legit_client("worker-0", created=NOW + 22 * SECOND)))
    lines = []
    _result, failure = run_to_end(join_run(api, clock, hosts("worker-0"), polls, lines))
    assert failure is None and "worker-0.stale" not in api.approval_log
    assert api.approval_log[0] == "worker-0.client"
    refused = [
        line
        for line in lines
        if "waiting for its kubelet's first certificate request (refused: worker-0.stale: " in line
    ]
    assert refused and "before-not-before: expected a CSR created after %s" % at(5) in refused[0]


def test_a_replayed_copy_of_the_kubelets_csr_is_approved_with_it():
    clock = FakeClock()
    key = f.make_key()
    own = legit_client("worker-0", key=key, created=NOW - 2 * MINUTE)
    replay = legit_client("worker-0", key=key, name="worker-0.replay", created=NOW - MINUTE)
    api = FakeApi(clock, [own, replay], kubelet=True)
    result, failure = run_to_end(join_run(api, clock, hosts("worker-0")))
    assert failure is None and api.approval_log[:2] == ["worker-0.client", "worker-0.replay"]
    assert result["joined"] == ["worker-0"]


def test_a_second_key_in_the_settle_period_stops_the_host_while_the_other_joins():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0"), legit_client("worker-1")], kubelet=True)
    rogue = legit_client("worker-0", name="worker-0.rogue", created=NOW)
    clock.at_round(2, lambda: api.put_csr(rogue))
    result, failure = run_to_end(join_run(api, clock, hosts("worker-0", "worker-1")))
    assert sorted(api.approval_log) == ["worker-1.client", "worker-1.serving"]
    assert failure.startswith("1 of 2 host(s) failed (day2_max_failed_hosts is 0), 1 joined: worker-0: ")
    assert "the pending client CSRs of worker-0 carry 2 different public keys" in failure
    assert "worker-0.client (requested by" in failure and "worker-0.rogue (requested by" in failure
    entry = result["hosts"]["worker-0"]
    assert (entry["state"], entry["failed_in"], entry["phase_started"]["failed"]) == ("failed", "settling", at(5))
    assert result["joined"] == ["worker-1"] and result["duration"] == 20.0  # not at a timeout


def test_a_second_key_after_the_approval_stops_the_host_before_its_serving_csr():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")], kubelet=True)
    rogue = legit_client("worker-0", name="worker-0.rogue", created=NOW + 12 * SECOND)
    clock.at_round(4, lambda: api.put_csr(rogue))  # the client CSR was approved at 10 s
    result, failure = run_to_end(join_run(api, clock, hosts("worker-0")))
    assert api.approval_log == ["worker-0.client"]
    assert "a second public key for worker-0: worker-0.rogue (requested by" in failure
    assert "oc delete csr worker-0.rogue" in failure and result["hosts"]["worker-0"]["failed_in"] == "settling"


def test_a_rogue_after_the_host_joined_is_never_approved():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0"), legit_client("worker-1")], kubelet=True)
    polls = {"worker-1": Poller(SILENT, SILENT, SILENT, SILENT, KUBELET)}  # worker-1 reboots 20 s later
    clock.at_round(6, lambda: api.put_csr(legit_client("worker-0", name="worker-0.rogue", created=NOW + 25 * SECOND)))
    result, failure = run_to_end(join_run(api, clock, hosts("worker-0", "worker-1"), polls))
    assert failure is None and result["joined"] == ["worker-0", "worker-1"] and result["rounds"] > 6
    assert "worker-0.rogue" not in api.approval_log


def test_a_rerun_takes_the_joined_host_where_it_stands_and_changes_nothing():
    clock = FakeClock()
    done = [
        legit_client("worker-0", conditions=APPROVED),
        serving_csr("worker-0", ips=[IPS["worker-0"]], name="worker-0.serving", conditions=APPROVED),
    ]
    api = FakeApi(clock, done, nodes=[node_object("worker-0", ready=True, ip=IPS["worker-0"])])
    result, failure = run_to_end(join_run(api, clock, hosts("worker-0"), {"worker-0": Poller(SILENT)}))
    assert failure is None and result["changed"] is False and result["approved"] == []
    assert result["joined"] == ["worker-0"] and result["rounds"] == 1 and clock.sleeps == []
    assert result["hosts"]["worker-0"]["rebooted_by"] == "its Node exists"
    assert api.count("PUT") == api.count("PATCH") == 0


def test_a_half_joined_host_gets_its_serving_csr_at_once():
    clock = FakeClock()
    state = [
        legit_client("worker-0", conditions=APPROVED),
        serving_csr("worker-0", ips=[IPS["worker-0"]], name="worker-0.serving"),
    ]
    api = FakeApi(clock, state, nodes=[node_object("worker-0", ip=IPS["worker-0"])], kubelet=True)
    polls = {"worker-0": Poller(SILENT)}  # its kubelet does not answer our probe: the Node is the evidence
    result, failure = run_to_end(join_run(api, clock, hosts("worker-0"), polls))
    assert failure is None and api.approval_log == ["worker-0.serving"]
    assert result["approved"][0]["approved_at"] == at(0) and result["rounds"] == 2


def test_one_serving_approval_per_run_the_newest():
    clock = FakeClock()
    state = [
        legit_client("worker-0", conditions=APPROVED),
        serving_csr("worker-0", ips=[IPS["worker-0"]], name="worker-0.old", created=NOW - 9 * MINUTE),
        serving_csr("worker-0", ips=[IPS["worker-0"]], name="worker-0.new", created=NOW - MINUTE),
    ]
    api = FakeApi(clock, state, nodes=[node_object("worker-0", ip=IPS["worker-0"])])
    clock.at_round(4, lambda: api.set_ready("worker-0"))
    result, failure = run_to_end(join_run(api, clock, hosts("worker-0")))
    assert failure is None and api.approval_log == ["worker-0.new"] and result["rounds"] == 4


# ---------------------------------------------------------------- serving certificates on real NICs

V6 = "fd2e:6f44:5dd8:c956::"
DUAL_NETWORK = policy.Network.of(f.NETWORK_FACTS)


def dual_stack_node(name, *more, ready=False):
    """The Node of a host given only its IPv4 address, whose kubelet reports an IPv6 address too (and ``more``)."""
    obj = node_object(name, ready=ready, ip=IPS[name])
    extra = [{"type": "InternalIP", "address": a} for a in (V6 + IPS[name].rsplit(".", 1)[1], *more)]
    obj["status"]["addresses"][1:1] = extra
    return obj


def dual_stack_state(name, *more):
    sans = [IPS[name], V6 + IPS[name].rsplit(".", 1)[1], *more]
    return [legit_client(name, conditions=APPROVED), serving_csr(name, ips=sans, dns=[name], name=name + ".serving")]


def test_a_host_given_only_ip_gets_the_serving_csr_its_dual_stack_node_reports():
    clock = FakeClock()
    api = FakeApi(clock, dual_stack_state("worker-0"), nodes=[dual_stack_node("worker-0")], kubelet=True)
    result, failure = run_to_end(join_run(api, clock, hosts("worker-0"), network=DUAL_NETWORK))
    assert failure is None and api.approval_log == ["worker-0.serving"] and result["joined"] == ["worker-0"]
    assert result["warnings"] == [] and result["hosts"]["worker-0"]["refused"] == {}


def test_without_the_machine_networks_a_node_reported_address_is_refused_and_named():
    clock = FakeClock()
    api = FakeApi(clock, dual_stack_state("worker-0"), nodes=[dual_stack_node("worker-0")], kubelet=True)
    lines = []
    result, failure = run_to_end(join_run(api, clock, hosts("worker-0"), lines=lines, join_timeout=30))
    assert api.approval_log == [] and result["failed_hosts"] == ["worker-0"]
    why = (
        "worker-0.serving: san-outside-machine-networks: SAN fd2e:6f44:5dd8:c956::20, reported by its Node, is "
        "outside the cluster's machine networks (none known (csr_approve's cluster has no machine_networks))"
    )
    assert any(
        line.endswith(
            "half-joined; its Node registered, not Ready yet; waiting for its serving certificate request (refused: "
            "%s: the certificate would not be this host's)" % why
        )
        for line in lines
    ), lines
    assert why in failure and result["hosts"]["worker-0"]["refused"]["worker-0.serving"].startswith(why[18:])


@pytest.mark.parametrize(
    "extra, reason, why",
    [
        ("198.51.100.20", "san-outside-machine-networks", "SAN 198.51.100.20, reported by its Node, is outside"),
        (V6 + "5", "san-is-vip", "SAN fd2e:6f44:5dd8:c956::5 is the cluster's API VIP"),
        ("127.0.111.21", "san-of-another-node", "SAN 127.0.111.21 is an address of worker-1"),
        (V6 + "10", "san-of-another-node", "SAN fd2e:6f44:5dd8:c956::10 is an address of master-0"),
    ],
)
def test_an_address_its_node_reports_but_may_not_have_keeps_the_serving_csr_pending(extra, reason, why):
    clock = FakeClock()
    master = node_object("master-0", ready=True, ip="127.0.111.10")
    master["status"]["addresses"].insert(1, {"type": "InternalIP", "address": V6 + "10"})
    nodes = [dual_stack_node("worker-0", extra), master]
    api = FakeApi(clock, dual_stack_state("worker-0", extra), nodes=nodes, kubelet=True)
    records = hosts("worker-0", "worker-1")
    run = join_run(api, clock, records, {"worker-1": Poller(SILENT)}, network=DUAL_NETWORK, join_timeout=30)
    result, failure = run_to_end(run)
    assert api.approval_log == [] and "worker-0" in result["failed_hosts"]
    assert result["hosts"]["worker-0"]["refused"]["worker-0.serving"].startswith(f"{reason}: {why}")
    assert f"worker-0.serving: {reason}: {why}" in failure


def test_a_node_ready_without_its_serving_certificate_joins_with_a_warning_naming_the_refusal():
    clock = FakeClock()
    node_ = dual_stack_node("worker-0", "198.51.100.20", ready=True)
    api = FakeApi(clock, dual_stack_state("worker-0", "198.51.100.20"), nodes=[node_])
    result, failure = run_to_end(join_run(api, clock, hosts("worker-0"), network=DUAL_NETWORK))
    assert failure is None and result["joined"] == ["worker-0"] and api.approval_log == []
    assert result["warnings"] == [
        "worker-0: joined, its serving CSR pending (refused: worker-0.serving: san-outside-machine-networks: SAN "
        "198.51.100.20, reported by its Node, is outside the cluster's machine networks (127.0.111.0/24, "
        "fd2e:6f44:5dd8:c956::/64): the certificate would not be this host's)"
    ]


def test_a_rogue_serving_csr_refused_after_the_hosts_own_was_approved_is_no_warning():
    clock = FakeClock()
    state = [*dual_stack_state("worker-0"), serving_csr("worker-0", ips=["127.0.111.99"], name="worker-0.rogue")]
    api = FakeApi(clock, state, nodes=[dual_stack_node("worker-0")], kubelet=True)
    result, failure = run_to_end(join_run(api, clock, hosts("worker-0"), network=DUAL_NETWORK))
    assert failure is None and api.approval_log == ["worker-0.serving"] and result["joined"] == ["worker-0"]
    assert result["warnings"] == [] and list(result["hosts"]["worker-0"]["refused"]) == ["worker-0.rogue"]


def test_check_mode_predicts_the_dual_stack_serving_csr_with_the_same_networks():
    clock = FakeClock()
    api = FakeApi(clock, dual_stack_state("worker-0"), nodes=[dual_stack_node("worker-0")], kubelet=True)
    blind = join_run(api, clock, hosts("worker-0")).predict()
    assert blind["would_approve"] == [] and blind["msg"][0].endswith("may carry 127.0.111.20")
    predicted = join_run(api, clock, hosts("worker-0"), network=DUAL_NETWORK).predict()
    assert [entry["name"] for entry in predicted["would_approve"]] == ["worker-0.serving"]
    assert predicted["msg"][0].endswith("may carry 127.0.111.20 and its Node's other addresses in the machine networks")
    result, _failure = run_to_end(join_run(api, clock, hosts("worker-0"), network=DUAL_NETWORK))
    assert [entry["name"] for entry in result["approved"]] == ["worker-0.serving"]


def test_follow_checks_the_machine_networks_before_it_connects(lab):
    params = params_for(lab, until=None, cluster={"machine_networks": ["fd2e::/200"]})
    with pytest.raises(InputError, match=r"cluster: field machine_networks value 'fd2e::/200' is not a CIDR"):
        engine.follow(params, True, refuse_to_connect, print)


def test_a_replaced_host_is_not_stopped_by_its_old_installations_approval():
    clock = FakeClock()
    old = legit_client("worker-0", name="worker-0.old", created=NOW - 30 * MINUTE, conditions=APPROVED)
    api = FakeApi(clock, [old, legit_client("worker-0", created=NOW - MINUTE)], kubelet=True)
    run = join_run(api, clock, hosts("worker-0"), installed_after={"worker-0": stamp(NOW - 10 * MINUTE)})
    result, failure = run_to_end(run)
    assert failure is None and api.approval_log[0] == "worker-0.client" and result["joined"] == ["worker-0"]


def flood_for(name, count):
    return [legit_client(name, name="%s.flood-%02d" % (name, i), created=NOW - i * MINUTE) for i in range(count)]


def test_the_flood_guard_stops_every_host_before_any_approval():
    clock = FakeClock()
    api = FakeApi(clock, [*flood_for("worker-0", 10), legit_client("worker-1")], kubelet=True)
    result, failure = run_to_end(join_run(api, clock, hosts("worker-0", "worker-1"), max_failed_hosts=2))
    assert failure is None and result["failed_hosts"] == ["worker-0", "worker-1"]
    assert api.count("PUT") == 0 and result["rounds"] == 1
    problem = result["hosts"]["worker-1"]["problem"]
    assert problem.startswith(
        "flood guard: expected at most 10 pending CSRs for the 2 new hosts within 1:00:00, found 11"
    )


def test_a_joined_host_still_gets_its_marks_during_a_flood():
    clock = FakeClock()
    api = FakeApi(clock, flood_for("worker-0", 11), nodes=[node_object("worker-1", ready=True)])
    records = [*hosts("worker-0"), dict(hosts("worker-1")[0], state="joined", labels=INFRA)]
    run = join_run(api, clock, records, max_failed_hosts=1, still_wanted=lambda: clock.round < 20)
    result, failure = run_to_end(run)
    assert failure is None and result["failed_hosts"] == ["worker-0"] and result["joined"] == ["worker-1"]
    assert api.patches == [("worker-1", {"metadata": {"labels": INFRA}})] and api.count("PUT") == 0


def test_transient_list_errors_are_retried_next_round_and_permanent_ones_fail():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")], kubelet=True)
    api.fail("GET", "csrs", 503, 503, 503)  # every try of the first round
    result, failure = run_to_end(join_run(api, clock, hosts("worker-0")))
    assert failure is None and result["api_errors"] == 1 and result["joined"] == ["worker-0"]

    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")])
    api.fail("GET", "nodes", 403)
    result, failure = run_to_end(join_run(api, clock, hosts("worker-0")))
    assert failure.startswith("cannot read CSRs and Nodes: permission denied (403 Forbidden) to list nodes")
    assert result["hosts"]["worker-0"]["state"] == "rebooted"


def test_a_5xx_on_the_approval_is_tried_again_next_round():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")], kubelet=True)
    api.fail("PUT", "approval", 503, 503, 503)
    result, failure = run_to_end(join_run(api, clock, hosts("worker-0")))
    assert failure is None and api.approval_log == ["worker-0.client", "worker-0.serving"]
    assert result["approved"][0]["approved_at"] == at(15) and result["api_errors"] == 1


@pytest.mark.parametrize("race", ["conflicts", "deleted"])
def test_an_approval_that_races_someone_else_is_decided_again_next_round(race):
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")], kubelet=True)

    def delete_and_refile(fake):
        fake.csrs.pop("worker-0.client")
        fake.put_csr(legit_client("worker-0", name="worker-0.refiled", key=None, created=NOW + 10 * SECOND))

    if race == "conflicts":
        api.fail("PUT", "approval", *[bump("worker-0.client")] * 3)  # every try of update_fresh
    else:
        api.fail("PUT", "approval", delete_and_refile)
    result, failure = run_to_end(join_run(api, clock, hosts("worker-0")))
    assert failure is None and result["joined"] == ["worker-0"]
    assert result["approved"][0]["approved_at"] == at(15)
    assert api.approval_log[0] == ("worker-0.client" if race == "conflicts" else "worker-0.refiled")


def test_a_forbidden_approval_fails_with_the_rbac_hint():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")])
    api.fail("PUT", "approval", 403)
    result, failure = run_to_end(join_run(api, clock, hosts("worker-0")))
    assert failure.startswith(
        "cannot approve CSR worker-0.client of worker-0: permission denied (403 Forbidden) to update "
        "certificatesigningrequests/approval.certificates.k8s.io worker-0.client: "
    )
    assert "approve on the kubelet signers (docs/rbac.md)" in failure
    assert result["approved"] == [] and result["hosts"]["worker-0"]["state"] == "settling"


def test_labels_and_taints_are_set_as_soon_as_the_node_registers():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")], kubelet=True)
    lines = []
    record = dict(hosts("worker-0")[0], labels=INFRA, taints=DEDICATED)
    result, failure = run_to_end(join_run(api, clock, [record], lines=lines))
    assert failure is None and result["joined"] == ["worker-0"]
    ((name, patch),) = api.patches
    assert name == "worker-0" and patch["metadata"]["labels"] == INFRA and patch["spec"]["taints"] == DEDICATED
    assert "%s worker-0: labels and taints set on its Node (labels node-role.kubernetes.io/infra=; taints " \
        "dedicated=infra:NoSchedule)" % at(15) in lines  # fmt: skip
    # set on the NotReady Node, in the round its serving CSR is approved
    assert result["approved"][1]["approved_at"] == at(15)


def test_a_node_is_joined_only_once_its_marks_are_set():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")], kubelet=True)
    api.fail("PATCH", "node", *[409] * 6)  # every try of rounds 4 and 5
    lines = []
    record = dict(hosts("worker-0")[0], labels=INFRA)
    result, failure = run_to_end(join_run(api, clock, [record], lines=lines))
    assert failure is None and result["joined"] == ["worker-0"] and result["rounds"] == 6
    assert "%s worker-0: half-joined; Node Ready; setting its labels and taints" % at(20) in lines
    assert api.patches == [("worker-0", {"metadata": {"labels": INFRA}})]
    assert result["hosts"]["worker-0"]["phase_started"]["joined"] == at(25)


def test_a_joined_host_only_gets_its_marks_converged():
    clock = FakeClock()
    registered = node_object("worker-0", ready=True, ip=IPS["worker-0"], taints=[])
    pending = [legit_client("worker-0"), serving_csr("worker-0", ips=[IPS["worker-0"]], name="worker-0.serving")]
    api = FakeApi(clock, pending, nodes=[registered])
    poller = Poller(KUBELET)
    record = dict(hosts("worker-0")[0], state="joined", labels=INFRA, taints=DEDICATED)
    result, failure = run_to_end(join_run(api, clock, [record], {"worker-0": poller}))
    assert failure is None and result["joined"] == ["worker-0"] and result["rounds"] == 1
    assert api.count("PUT") == 0 and result["approved"] == []  # its pending CSRs are not its kubelet's business
    assert poller.polls == 0  # its agent is gone, its kubelet has nothing to tell
    assert len(api.patches) == 1 and api.nodes["worker-0"]["spec"]["taints"] == DEDICATED
    assert result["changed"] is True  # its Node was changed


def test_a_joined_host_whose_marks_are_right_changes_nothing():
    clock = FakeClock()
    registered = node_object("worker-0", ready=True, labels=INFRA)
    api = FakeApi(clock, nodes=[registered])
    record = dict(hosts("worker-0")[0], state="joined", labels=INFRA)
    result, failure = run_to_end(join_run(api, clock, [record]))
    assert failure is None and result["changed"] is False and api.count("PATCH") == 0


def test_the_virtual_cd_is_ejected_once_when_the_disk_is_written():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0"), legit_client("worker-1")], kubelet=True)
    writing = answered("installing-in-progress", "Writing image to disk", 60)
    rebooting = answered("installing-in-progress", "Rebooting", 100)
    polls = {"worker-0": Poller(writing, rebooting, KUBELET), "worker-1": Poller(writing, SILENT, KUBELET)}
    ejected = []

    def eject(name):
        ejected.append((name, clock.t))
        if name == "worker-1":
            raise Day2Error("the BMC refused: 401")
        return "its virtual CD is ejected"

    lines = []
    run = join_run(api, clock, hosts("worker-0", "worker-1"), polls, lines, on_disk_written=eject, clock_skew=600)
    result, failure = run_to_end(run)
    assert failure is None and result["joined"] == ["worker-0", "worker-1"]
    assert ejected == [("worker-0", 5.0), ("worker-1", 10.0)]  # Rebooting, then the kubelet; never again
    assert "%s worker-0: the disk is written; its virtual CD is ejected" % at(5) in lines
    assert result["warnings"] == ["worker-1: could not eject the virtual CD: the BMC refused: 401"]


def test_a_failed_host_is_not_ejected():
    clock = FakeClock()
    ejected = []
    polls = {"worker-0": Poller(answered("error", "Rebooting", 100))}
    run = join_run(FakeApi(clock), clock, hosts("worker-0"), polls, on_disk_written=ejected.append, max_failed_hosts=1)
    result, failure = run_to_end(run)
    assert failure is None and result["failed_hosts"] == ["worker-0"] and ejected == []


def test_the_loop_stops_when_the_run_that_started_it_is_gone():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")])
    result, failure = run_to_end(join_run(api, clock, hosts("worker-0"), still_wanted=lambda: clock.round < 2))
    assert failure == (
        "the run that started this loop is gone (ansible-playbook was stopped): stopping; run the playbook again to "
        "go on"
    )
    assert result["rounds"] == 2 and api.approval_log == []


# ---------------------------------------------------------------- the timeouts of each host


def test_a_host_that_never_answers_fails_at_the_boot_timeout_and_the_others_go_on():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-1")], kubelet=True)
    polls = {"worker-0": Poller(SILENT), "worker-1": Poller(*[SILENT] * 5, KUBELET)}  # worker-1 boots late
    run = join_run(api, clock, hosts("worker-0", "worker-1"), polls, boot_timeout=30, max_failed_hosts=1)
    result, failure = run_to_end(run)
    assert failure is None and result["joined"] == ["worker-1"] and result["failed_hosts"] == ["worker-0"]
    entry = result["hosts"]["worker-0"]
    assert entry["phase_started"]["failed"] == at(30) and entry["failed_in"] == "waiting"
    assert entry["problem"] == (
        "nothing answered within day2_boot_timeout (30 s): never answered: not booted, booted a wrong ISO (another "
        "cluster, MAC not in the ISO, expired token) or unreachable at 127.0.111.20:8090; its kubelet port 10250 "
        "did not answer either. Boot it (check its console) and run again"
    )
    assert result["warnings"] == ["1 host(s) failed, within day2_max_failed_hosts (1): worker-0"]
    assert result["duration"] == 45.0  # worker-1's kubelet answered at 25 s: settled at 35 s, joined at 45 s


def test_a_host_that_does_not_reboot_fails_at_the_install_timeout():
    clock = FakeClock()
    polls = {"worker-0": Poller(answered("installing-in-progress", "Installing", 40, message="Installing: 40%"))}
    result, failure = run_to_end(join_run(FakeApi(clock), clock, hosts("worker-0"), polls, install_timeout=60))
    assert failure == (
        "1 of 1 host(s) failed (day2_max_failed_hosts is 0), 0 joined: worker-0: not rebooted into the installed "
        "system within 60 s: worker-0: reached installing; status installing-in-progress at stage Installing (40%); "
        "Host is installing-in-progress; last event: Installing: 40%"
    )
    assert result["hosts"]["worker-0"]["phase_started"]["failed"] == at(60)


def test_a_host_that_rebooted_but_is_not_ready_fails_at_the_join_timeout():
    clock = FakeClock()
    polls = {"worker-0": Poller(SILENT, KUBELET)}  # rebooted at 5 s; no CSR ever comes
    result, failure = run_to_end(join_run(FakeApi(clock), clock, hosts("worker-0"), polls, join_timeout=40))
    assert failure.endswith(
        "worker-0: not Ready within 40 s after it rebooted (its kubelet answers (handshake)): waiting for its "
        "kubelet's first certificate request"
    )
    entry = result["hosts"]["worker-0"]
    assert entry["phase_started"]["failed"] == at(45) and entry["failed_in"] == "settling"


def test_more_failed_hosts_than_allowed_fail_the_run_after_the_others_finished():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-2")], kubelet=True)
    polls = {"worker-0": Poller(answered("error")), "worker-1": Poller(answered("cancelled"))}
    run = join_run(api, clock, hosts("worker-0", "worker-1", "worker-2"), polls, max_failed_hosts=1)
    result, failure = run_to_end(run)
    assert failure.startswith("2 of 3 host(s) failed (day2_max_failed_hosts is 1), 1 joined: worker-0: host worker-0")
    assert " | worker-1: host worker-1 (127.0.111.21) failed: status cancelled" in failure
    assert result["joined"] == ["worker-2"] and sorted(api.approval_log) == ["worker-2.client", "worker-2.serving"]


# ---------------------------------------------------------------- check mode: predict


def predict_then_run(api, clock, records, **options):
    predicted = join_run(api, FakeClock(), records, **options).predict()
    calls = list(api.calls)
    assert all(method == "GET" for method, _path in calls)  # check mode writes nothing
    result, _failure = run_to_end(join_run(api, clock, records, **options))
    return predicted, result


def test_check_mode_predicts_exactly_what_the_loop_approves_on_the_same_state():
    clock = FakeClock()
    key = f.make_key()
    state = [
        # worker-0 rebooted: its client CSR and a replayed copy of it
        legit_client("worker-0", key=key, created=NOW - 2 * MINUTE),
        legit_client("worker-0", key=key, name="worker-0.replay", created=NOW - MINUTE),
        serving_csr("worker-0", ips=["10.9.9.9"], name="worker-0.foreign-serving"),
        # worker-1 half-joined: its Node registered; the newer of its serving CSRs
        legit_client("worker-1", conditions=APPROVED, created=NOW - 20 * MINUTE),
        serving_csr("worker-1", ips=[IPS["worker-1"]], name="worker-1.old", created=NOW - 9 * MINUTE),
        serving_csr("worker-1", ips=[IPS["worker-1"]], name="worker-1.new", created=NOW - 3 * MINUTE),
        # worker-2: two keys, nothing
        legit_client("worker-2", created=NOW - 2 * MINUTE),
        legit_client("worker-2", name="worker-2.other", created=NOW - MINUTE),
        # worker-3 joined earlier: nothing of it
        legit_client("worker-3", created=NOW - MINUTE),
        # worker-4 replaced: the old installation's approval does not count
        legit_client("worker-4", name="worker-4.old", created=NOW - 30 * MINUTE, conditions=APPROVED),
        legit_client("worker-4", created=NOW - MINUTE),
        # rogues
        client_csr("intruder", name="rogue.unknown-host"),
        client_csr("master-0", name="rogue.existing-node"),
    ]
    nodes = [node_object("worker-1", ip=IPS["worker-1"]), node_object("worker-3", ready=True, ip=IPS["worker-3"])]
    api = FakeApi(clock, state, nodes=nodes)
    records = hosts("worker-0", "worker-1", "worker-2")
    records += [dict(hosts("worker-3")[0], state="joined"), hosts("worker-4")[0]]
    options = {"max_failed_hosts": 5, "join_timeout": 60, "installed_after": {"worker-4": stamp(NOW - 10 * MINUTE)}}
    predicted, result = predict_then_run(api, clock, records, **options)
    would = sorted(entry["name"] for entry in predicted["would_approve"])
    assert would == ["worker-0.client", "worker-0.replay", "worker-1.new", "worker-4.client"]
    assert would == sorted(entry["name"] for entry in result["approved"]) == sorted(api.approval_log)
    assert predicted["changed"] is True
    assert {
        "name": "worker-1.new",
        "node": "worker-1",
        "signer": f.SERVING_SIGNER,
        "created": stamp(NOW - 3 * MINUTE),
    } in (predicted["would_approve"])
    assert result["failed_hosts"] == ["worker-0", "worker-1", "worker-2", "worker-4"]  # no kubelet: never Ready


def test_check_mode_predicts_nothing_in_a_flood_and_names_where_each_host_is_followed():
    clock = FakeClock()
    api = FakeApi(clock, flood_for("worker-0", 11))
    predicted, result = predict_then_run(api, clock, hosts("worker-0", "worker-1"), max_failed_hosts=2)
    assert predicted["would_approve"] == result["approved"] == [] and predicted["changed"] is False
    assert predicted["would_follow"][0] == {
        "name": "worker-0",
        "address": "127.0.111.20",
        "agent_url": "http://127.0.111.20:8090/api/assisted-install/v2",
        "addresses": ["127.0.111.20"],
        "kubelet": "127.0.111.20:10250",
        "until": "ready",
        "from": "auto",
    }
    assert predicted["msg"][1] == (
        "Check mode: worker-1 would be followed at http://127.0.111.21:8090/api/assisted-install/v2 (then its kubelet "
        "at 127.0.111.21:10250), else from inside the cluster until its Node is Ready; would approve none yet (no CSR "
        "of this host is pending); its serving certificate may carry 127.0.111.21"
    )


def test_check_mode_names_the_csrs_it_would_approve():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")])
    predicted = join_run(api, clock, hosts("worker-0")).predict()
    assert predicted["msg"] == [
        "Check mode: worker-0 would be followed at http://127.0.111.20:8090/api/assisted-install/v2 (then its kubelet "
        "at 127.0.111.20:10250), else from inside the cluster until its Node is Ready; would approve now, once its "
        "kubelet answers: worker-0.client; its serving certificate may carry 127.0.111.20"
    ]
    assert [call for call in api.calls if call[0] != "GET"] == [] and clock.sleeps == []


# ================================================================ the agent_wait loop


def wait_run(polls, target="rebooted", **options):
    clock = FakeClock()
    names_ = sorted(polls)
    run = join_run(None, clock, hosts(*names_), {n: Poller(*polls[n]) for n in names_}, target=target, **options)
    return run_to_end(run)


ALL_THE_WAY = [
    answered("discovering"),
    answered("known"),
    answered("preparing-for-installation"),
    answered("installing-in-progress", "Writing image to disk", 50),
    answered("installing-in-progress", "Rebooting", 100),
]


@pytest.mark.parametrize("target, rounds", [("discovered", 1), ("validated", 2), ("installing", 3), ("rebooted", 5)])
def test_agent_wait_stops_at_its_target(target, rounds):
    result, failure = wait_run({"worker-0": ALL_THE_WAY}, target)
    assert failure is None and result["reached"] == ["worker-0"] and result["rounds"] == rounds
    assert result["hosts"]["worker-0"]["reached"] == target and result["changed"] is False
    assert result["joined"] == [] and result["approved"] == []


@pytest.mark.parametrize("kubelet", [KUBELET, KUBELET_NO_CERT], ids=["handshake", "internal_error"])
def test_agent_wait_counts_a_kubelet_that_answers_as_rebooted(kubelet):
    result, failure = wait_run({"worker-0": [answered("installing-in-progress", "Installing"), SILENT, kubelet]})
    assert failure is None and result["rounds"] == 3 and result["reached"] == ["worker-0"]
    entry = result["hosts"]["worker-0"]
    assert (entry["state"], entry["rebooted_by"]) == ("rebooted", "its kubelet answers (%s)" % kubelet.kubelet)


def test_agent_wait_without_waiting_is_one_snapshot():
    result, failure = wait_run({"worker-0": [answered("known")], "worker-1": [SILENT]}, wait=False)
    assert failure is None and result["rounds"] == 1 and result["reached"] == [] and result["failed_hosts"] == []
    assert result["hosts"]["worker-0"]["reached"] == "validated" and result["hosts"]["worker-1"]["reached"] == "waiting"


def test_agent_wait_without_waiting_still_fails_fast():
    result, failure = wait_run({"worker-0": [answered("error", "Installing", 50)]}, wait=False)
    assert "host worker-0 (127.0.111.20) failed: status error at stage Installing (50%)" in failure
    assert result["failed_hosts"] == ["worker-0"] and result["rounds"] == 1


def test_agent_wait_fails_a_host_booted_into_the_iso_again_even_at_rebooting():
    result, failure = wait_run({"worker-0": [answered("installing-pending-user-action", "Rebooting", 100)]})
    assert "fix the boot order" in failure and result["failed_hosts"] == ["worker-0"]


def test_agent_wait_fails_a_host_not_at_its_target_at_the_install_timeout():
    polls = {"worker-0": [answered("insufficient")], "worker-1": [answered("known")]}
    result, failure = wait_run(polls, "validated", install_timeout=20, validation_grace=3600)
    assert failure == (
        "1 of 2 host(s) failed (day2_max_failed_hosts is 0), 1 reached validated: worker-0: not at validated within "
        "20 s: worker-0: reached discovered; status insufficient; Host is insufficient"
    )
    assert result["reached"] == ["worker-1"] and result["hosts"]["worker-0"]["phase_started"]["failed"] == at(20)


@pytest.mark.parametrize("allowed", [1, 2])
def test_agent_wait_max_failed_hosts(allowed):
    polls = {"worker-0": [answered("known")], "worker-1": [answered("error")], "worker-2": [SILENT]}
    result, failure = wait_run(polls, "validated", boot_timeout=10, max_failed_hosts=allowed)
    assert result["failed_hosts"] == ["worker-1", "worker-2"] and result["reached"] == ["worker-0"]
    if allowed == 1:
        assert failure.startswith("2 of 3 host(s) failed (day2_max_failed_hosts is 1), 1 reached validated: ")
        assert "worker-1: host worker-1 (127.0.111.21) failed: status error" in failure
        assert " | worker-2: nothing answered within day2_boot_timeout (10 s)" in failure
    else:
        assert failure is None
        assert result["warnings"] == ["2 host(s) failed, within day2_max_failed_hosts (2): worker-1, worker-2"]


# ================================================================ follow(): the entry point of both faces


def refuse_to_connect():
    raise AssertionError("the cluster must not be contacted")


def connected(api):
    return lambda: (types.SimpleNamespace(client=api), api_client(api))


@pytest.fixture
def lab(tmp_path):
    created = Lab(tmp_path)
    yield created
    created.close()


def params_for(lab, count=1, **overrides):
    values = {
        "hosts": [{"name": "worker-%d" % i, "address": lab.address(i)} for i in range(count)],
        "agent_port": lab.port,
        "kubelet_port": lab.kubelet_port,
        "request_timeout": 2,
        "wait": False,
        "until": "rebooted",
        "first_header": "auto",
        "follow_from": "controller",  # the monitor pod: test_join_monitor.py
    }
    values.update(overrides)
    return values


def test_agent_wait_in_check_mode_asks_no_one(lab):
    one = lab.agent(0, TO_REBOOT)
    hosts_ = [{"name": "worker-0", "address": lab.address(0)}, {"name": "worker-1", "address": "fd00::21"}]
    result = engine.follow(params_for(lab, hosts=hosts_, wait=True), True, refuse_to_connect, lab.said.append)
    assert result["would_follow"] == [
        {
            "name": "worker-0",
            "address": lab.address(0),
            "agent_url": "http://%s:%d/api/assisted-install/v2" % (lab.address(0), lab.port),
            "addresses": [lab.address(0)],
            "kubelet": "%s:%d" % (lab.address(0), lab.kubelet_port),
            "until": "rebooted",
            "from": "controller",
        },
        {
            "name": "worker-1",
            "address": "fd00::21",
            "agent_url": "http://[fd00::21]:%d/api/assisted-install/v2" % lab.port,
            "addresses": ["fd00::21"],
            "kubelet": "[fd00::21]:%d" % lab.kubelet_port,
            "until": "rebooted",
            "from": "controller",
        },
    ]
    assert result["changed"] is False and result["would_approve"] == [] and one.requests == []
    assert result["msg"][0].endswith("until it is rebooted; nothing is asked of its agent in check mode")


def test_check_mode_still_refuses_bad_inputs(lab):
    with pytest.raises(InputError, match="wait_sleep must be at least 1 second"):
        engine.follow(params_for(lab, wait_sleep=0), True, refuse_to_connect, lab.said.append)
    with pytest.raises(InputError, match="a wildcard in the name"):
        engine.follow(params_for(lab, hosts=[{"name": "w-*", "address": "192.0.2.1"}]), True, refuse_to_connect, print)


def test_csr_approve_in_check_mode_reads_the_cluster_and_asks_no_agent(lab):
    one = lab.agent(0, TO_REBOOT)
    filed = datetime.datetime.now(datetime.timezone.utc) - MINUTE  # follow() runs on the real clock
    api = FakeApi(FakeClock(), [legit_client("worker-0", created=filed)])
    params = params_for(lab, until=None, hosts=[{"name": "worker-0", "address": lab.address(0)}])
    result = engine.follow(params, True, connected(api), lab.said.append)
    assert [entry["name"] for entry in result["would_approve"]] == ["worker-0.client"]
    assert api.calls == [("GET", CSRS), ("GET", NODES)] and one.requests == []


def test_the_watcher_token_comes_from_the_secret_and_never_shows(lab):
    watcher = jwt({"auth_scheme": "watcherAuth", "exp": EXP})
    one = lab.agent(0, TO_REBOOT)
    one.token = watcher
    api = FakeApi(
        FakeClock(), secret=secret(agentAuthToken=jwt({"auth_scheme": "agentAuth"}), watcherAuthToken=watcher)
    )
    result = engine.follow(params_for(lab), False, connected(api), lab.said.append)
    assert result["token_info"] == {
        "source": "secret",
        "key": "watcherAuthToken",
        "persona": "watcherAuth",
        "expires": "2030-01-01T00:00:00Z",
        "first_header": WATCHER,
    }
    assert result["hosts"]["worker-0"]["agent"]["status"] == "discovering" and one.headers == [WATCHER, WATCHER]
    assert api.calls == [("GET", "/api/v1/namespaces/openshift-config/secrets/agent-auth-token")]
    assert watcher not in json.dumps(result) and watcher not in "".join(lab.said)


@pytest.mark.parametrize("version, header", [("4.17.12", USER), ("4.20.1", WATCHER), (None, WATCHER)])
def test_a_token_whose_claims_say_nothing_follows_the_clusters_version(lab, version, header):
    one = lab.agent(0, TO_REBOOT)
    one.token, one.header = "opaque-token", header
    api = FakeApi(FakeClock(), secret=secret(agentAuthToken="opaque-token"))
    params = params_for(lab, cluster={"version": version} if version else {})
    result = engine.follow(params, False, connected(api), lab.said.append)
    assert result["token_info"]["first_header"] == header and one.headers == [header, header]


def test_a_given_token_needs_no_cluster_for_agent_wait(lab):
    token = jwt({"infra_env_id": "e", "exp": EXP})  # a 4.17 token
    one = lab.agent(0, TO_REBOOT)
    one.token, one.header = token, USER
    result = engine.follow(params_for(lab, token=" %s\n" % token), False, refuse_to_connect, lab.said.append)
    assert result["token_info"] == {
        "source": "option",
        "key": None,
        "persona": None,
        "expires": "2030-01-01T00:00:00Z",
        "first_header": USER,
    }
    assert result["hosts"]["worker-0"]["agent"]["auth_header"] == USER and len(one.requests) == 2
    assert token not in json.dumps(result)


def test_the_first_header_asked_for_wins(lab):
    one = lab.agent(0, TO_REBOOT)
    one.header = USER
    result = engine.follow(params_for(lab, token=TOKEN, first_header=USER), False, refuse_to_connect, print)
    assert result["token_info"]["first_header"] == USER and one.headers == [USER, USER]
    assert result["hosts"]["worker-0"]["agent"]["auth_refused"] is None


def test_agent_wait_without_the_secret_says_what_to_do(lab):
    with pytest.raises(AgentTokenError, match=r"does not exist\. node-joiner creates it when it builds the ISO"):
        engine.follow(params_for(lab), False, connected(FakeApi(FakeClock())), print)


def test_csr_approve_without_the_secret_follows_the_kubelets_only(lab):
    lab.start_kubelet(0)
    api = FakeApi(FakeClock(), nodes=[node_object("worker-0", ready=True)])  # a re-run: it joined already
    params = params_for(lab, until=None, wait=True)
    result = engine.follow(params, False, connected(api), lab.said.append)
    assert result["joined"] == ["worker-0"] and result["token_info"] is None
    assert result["warnings"] == [
        "the agents are not asked (Secret openshift-config/agent-auth-token does not exist. node-joiner creates it "
        "when it builds the ISO: build the ISO first (day2_iso), or pass the token); a host counts as rebooted when "
        "its kubelet answers",
        "the API server sent no Date header: its clock is taken to be this one's",
    ]
    assert result["hosts"]["worker-0"]["agent"]["kubelet"] == "handshake"
    assert "openshift_agent.day2.csr_approve: following 1 host(s): worker-0 (settle 10s, boot timeout 1800s, at " \
        "most 0 failed)" in lab.said  # fmt: skip


def test_a_refused_token_fails_with_the_partial_result(lab):
    one = lab.agent(0, TO_REBOOT)
    one.token = "rotated"
    with pytest.raises(
        engine.JoinError, match=r"host worker-0 .*refused the token: in Watcher-Authorization: HTTP 401"
    ) as caught:
        engine.follow(params_for(lab, token=TOKEN, wait=True), False, refuse_to_connect, print)
    result = caught.value.result
    assert result["changed"] is False and result["hosts"]["worker-0"]["agent"]["answered"] is True
    assert result["rounds"] == 1 and TOKEN not in caught.value.message and TOKEN not in json.dumps(result)


def test_the_inputs_are_checked_before_the_cluster_is_read(lab):
    with pytest.raises(InputError, match="installed_after names hosts that are not followed: worker-9"):
        engine.follow(
            params_for(lab, until=None, installed_after={"worker-9": stamp(NOW)}), False, refuse_to_connect, print
        )


# ================================================================ a half-joined Node is joining (preflight's health)


def health_node(ready, created, changed, roles=("worker",)):
    return {
        "metadata": {
            "name": "worker-0",
            "creationTimestamp": created,
            "labels": {"node-role.kubernetes.io/%s" % role: "" for role in roles},
        },
        "status": {
            "conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": changed}],
            "addresses": [{"type": "InternalIP", "address": "127.0.111.20"}],
        },
    }


def test_a_node_never_ready_since_it_registered_is_joining_not_unhealthy():
    joining = health_node("False", "2024-05-01T12:00:00Z", "2024-05-01T12:00:01Z")
    failed = health_node("Unknown", "2024-05-01T12:00:00Z", "2024-05-01T15:00:00Z")
    assert never_ready(joining) and not never_ready(failed)
    assert health({}, [node_summary(joining)], {}, [])["joining"] == ["worker-0"]
    assert health({}, [node_summary(joining)], {}, [])["problems"] == []
    assert health({}, [node_summary(failed)], {}, [])["problems"] == ["Node worker-0 is not Ready"]
