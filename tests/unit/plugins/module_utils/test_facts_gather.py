# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_facts.cluster.read_objects and gather (day1_facts' whole work) against a fake API; _facts.health's Nodes."""

import json

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import ApiAccessError
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts import cluster
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.cluster import (
    READS,
    FactsError,
    build_facts,
    gather,
    read_objects,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.health import (
    master_architectures,
    node_summary,
)
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.facts_fixtures import b64, node, objects

TARGETS = {key: target for key, target, _role in READS}


class Module:
    """The module as gather uses it: its parameters."""

    def __init__(self, **params):
        self.params = dict({"allow_upgrading": False}, **params)


class FakeApi:
    """An ApiClient stand-in: answers GETs by path from READS keys; an int answer is that HTTP status."""

    def __init__(self, answers):
        self.answers = {TARGETS[key].path: answer for key, answer in answers.items()}
        self.api_url = "https://127.0.0.1:6443"  # the kubeconfig's server
        self.calls = 0
        self.paths = []

    def get(self, target):
        self.calls += 1
        self.paths.append(target.path)
        answer = self.answers.get(target.path)
        if isinstance(answer, int):
            if answer == 404:
                return None
            raise ApiAccessError("HTTP %d on %s" % (answer, target.describe()), status=answer, target=target)
        return answer


def test_read_objects_reads_every_entry_once():
    api = FakeApi(objects())
    found, unreadable = read_objects(api)
    assert api.paths == [target.path for _key, target, _role in READS] and api.calls == 18
    assert found == objects() and unreadable == {}


def test_read_objects_reads_only_the_keys_asked_for():
    api = FakeApi(objects())
    found, _unreadable = read_objects(api, keys=["clusterversion", "nodes", "proxy"])
    assert sorted(found) == ["clusterversion", "nodes", "proxy"] and api.calls == 3


def test_a_missing_required_object_says_this_is_no_openshift_cluster():
    with pytest.raises(FactsError) as caught:
        read_objects(FakeApi(objects(infrastructure=404)))
    assert caught.value.message.startswith(
        "get infrastructures.config.openshift.io cluster does not exist: this does not look like an OpenShift cluster"
    )


def test_a_forbidden_required_object_fails_with_the_api_error():
    with pytest.raises(ApiAccessError) as caught:
        read_objects(FakeApi(objects(nodes=403)))
    assert caught.value.status == 403 and "list nodes" in caught.value.message


@pytest.mark.parametrize("key", ["pull_secret", "network", "idms"])
def test_a_forbidden_other_object_is_recorded_as_unreadable(key):
    found, unreadable = read_objects(FakeApi(objects(**{key: 403})))
    assert found[key] is None and list(unreadable) == [key] and "HTTP 403" in unreadable[key]


def test_another_error_on_an_optional_object_fails():
    with pytest.raises(ApiAccessError) as caught:
        read_objects(FakeApi(objects(worker_pool=500)))
    assert caught.value.status == 500


def test_gather_is_the_module_result(monkeypatch):
    api = FakeApi(objects(network=None, pull_secret=403))
    monkeypatch.setattr(cluster.k8s, "connect", lambda module: ("k8s-client", api))
    result = gather(Module())
    facts = result["ansible_facts"]["day1_cluster"]
    assert sorted(result) == ["ansible_facts", "api_calls", "changed", "warnings"]
    assert result["changed"] is False and result["api_calls"] == 18
    assert facts["supported"] is False and "cannot read the pull secret" in facts["unsupported_reasons"][0]
    assert facts["warnings"] and result["warnings"] == ["day1_facts: %s" % w for w in facts["warnings"]]
    assert facts["warnings"][0].startswith("Network.config.openshift.io cluster does not exist")
    assert facts["server_url"] == "https://127.0.0.1:6443"


def test_gather_passes_allow_upgrading_on(monkeypatch):
    """The module's allow_upgrading leaves an upgrade in progress a warning: no unsafe_reasons."""
    partial = objects()["clusterversion"]
    partial["status"]["history"][0]["state"] = "Partial"
    for allowed in (False, True):
        monkeypatch.setattr(
            cluster.k8s, "connect", lambda module: ("k8s-client", FakeApi(objects(clusterversion=partial)))
        )
        facts = gather(Module(allow_upgrading=allowed))["ansible_facts"]["day1_cluster"]
        assert bool(facts["unsafe_reasons"]) is not allowed
        assert any(w.startswith("an upgrade to 4.18.3 is in progress") for w in facts["warnings"])


def test_gather_lets_access_errors_through(monkeypatch):
    def refused(module):
        raise ApiAccessError("cannot load the kubeconfig /k with its current-context: ...")

    monkeypatch.setattr(cluster.k8s, "connect", refused)
    with pytest.raises(ApiAccessError):
        gather(Module())


def test_the_facts_keep_their_node_fields():
    facts = build_facts(objects())
    assert facts["nodes"][0] == {
        "name": "master-0",
        "roles": ["master"],
        "internal_ips": ["192.0.2.10"],
        "hostname": "master-0",
        "architecture": "amd64",
        "ready": True,
    }


def test_a_pointer_that_is_not_json_is_one_warning():
    facts = build_facts(objects(worker_user_data={"data": {"userData": b64("not json")}}))
    assert facts["worker_ignition"] == {"url": None, "has_ca": False, "ignition_version": None}
    assert len([w for w in facts["warnings"] if "worker-user-data-managed" in w]) == 1


def test_a_pointer_without_a_merge_source_is_a_warning():
    pointer = {"ignition": {"version": "3.2.0", "config": {"merge": []}}}
    facts = build_facts(objects(worker_user_data={"data": {"userData": b64(json.dumps(pointer))}}))
    assert facts["worker_ignition"] == {"url": None, "has_ca": False, "ignition_version": "3.2.0"}
    assert facts["warnings"] == [
        "the worker ignition pointer config (Secret openshift-machine-api/worker-user-data-managed) has no merge "
        "source URL"
    ]


def test_node_summary_and_the_master_architecture():
    items = [
        node("w0", "worker", "192.0.2.20", arch="arm64"),
        node("cp0", "control-plane", "192.0.2.9", arch="s390x"),
        node("m1", "master", "192.0.2.11", arch="arm64", ready="False"),
        node("m0", "master", "192.0.2.10"),
    ]
    summaries = [node_summary(item) for item in items]
    assert summaries[2]["ready"] is False and summaries[2]["master"] is True and summaries[1]["master"] is False
    assert summaries[3]["addresses"] == ["192.0.2.10"] and summaries[3]["hostname"] == "m0"
    assert master_architectures(summaries) == ["arm64", "amd64"]  # in the list's order: node-joiner takes the first
    assert master_architectures(summaries[:2]) == []
