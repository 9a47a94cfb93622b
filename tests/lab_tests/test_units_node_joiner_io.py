"""In-process tests of what the lab's node-joiner runs read and write through the store (``StoreSource``), and of
the fault switches' refusals, without a lab process."""

from __future__ import annotations

import pytest
from lab import clusterinfo, kinds, seeds
from lab.errors import ApiError
from lab.faults import Faults
from lab.store import Store

NAMESPACE, NAME = "openshift-config", "agent-auth-token"


@pytest.fixture
def source():
    store = Store()
    seeds.load_into(store, "default")
    return clusterinfo.StoreSource(store)


def test_the_secret_is_created_then_updated_with_the_version_node_joiner_read(source):
    assert source.get_secret(NAMESPACE, NAME) is None
    created = source.put_secret({"metadata": {"name": NAME, "namespace": NAMESPACE}, "data": {"k": "YQ=="}})
    read = source.get_secret(NAMESPACE, NAME)
    assert read["data"] == {"k": "YQ=="} and read["metadata"]["uid"] == created["metadata"]["uid"]
    updated = source.put_secret(dict(read, data={"k": "Yg=="}))
    assert updated["data"] == {"k": "Yg=="} and updated["metadata"]["uid"] == created["metadata"]["uid"]
    assert int(updated["metadata"]["resourceVersion"]) > int(read["metadata"]["resourceVersion"])
    # A write based on a Secret that changed since it was read is a conflict, as on a real API server.
    with pytest.raises(ApiError) as stale:
        source.put_secret(dict(read, data={"k": "Yw=="}))
    assert stale.value.code == 409
    assert source.get_secret(NAMESPACE, NAME)["data"] == {"k": "Yg=="}


def test_a_second_create_of_the_secret_is_refused(source):
    body = {"metadata": {"name": NAME, "namespace": NAMESPACE}, "data": {}}
    source.put_secret(body)
    with pytest.raises(ApiError) as exists:
        source.put_secret(body)
    assert exists.value.code == 409 and exists.value.reason == "AlreadyExists"
    assert source.store.find(kinds.SECRET, NAMESPACE, NAME)["data"] == {}


def test_the_source_reads_what_the_api_server_serves(source):
    assert source.get("config.openshift.io/v1", "ClusterVersion", "version")["metadata"]["name"] == "version"
    with pytest.raises(clusterinfo.NotFound, match='secrets "absent" not found'):
        source.get("v1", "Secret", "absent", NAMESPACE)
    hidden = clusterinfo.StoreSource(source.store, lambda kind: kind.builtin)
    with pytest.raises(clusterinfo.NotFound, match="the server could not find the requested resource"):
        hidden.list("config.openshift.io/v1", "ImageDigestMirrorSet")


@pytest.mark.parametrize(
    "name, value, expected",
    [
        ("deny", "create", "fault deny='create' refused: deny entries look like VERB:RESOURCE"),
        ("api_error_rate", "2", "a rate is between 0 and 1, got 2; api_error_rate is fraction of API requests"),
        ("api_delay", "-1", "seconds cannot be negative, got -1; api_delay is seconds every API request waits"),
    ],
)
def test_a_refused_fault_value_names_the_fault_the_value_and_what_it_takes(name, value, expected):
    faults = Faults()
    with pytest.raises(ValueError) as refused:
        faults.set(name, value)
    assert expected in str(refused.value)
    assert faults.snapshot() == {}


def test_an_unknown_fault_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown fault 'no_such'; known: .*api_delay"):
        Faults().set("no_such", "1")
