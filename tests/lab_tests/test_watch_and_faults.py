"""Watch streams (events, timeout, 410 Gone) and the API fault switches."""

from __future__ import annotations

import json
import threading
import time

import pytest
import requests
from api_helpers import configmap, unique
from conftest import SESSION_EVENT_WINDOW, labctl

CMS = "/api/v1/namespaces/default/configmaps"


def read_events(response, count: int) -> list:
    events = []
    for line in response.iter_lines():
        if line:
            events.append(json.loads(line))
            if len(events) == count:
                break
    return events


def test_watch_from_resource_version_sees_changes_in_order(lab, no_faults):
    name = unique("watched")
    start_rv = lab.api("GET", CMS).json()["metadata"]["resourceVersion"]
    stream = lab.api(
        "GET",
        CMS,
        params={
            "watch": "true",
            "resourceVersion": start_rv,
            "timeoutSeconds": "10",
            "labelSelector": "watched=yes",
            "allowWatchBookmarks": "true",
        },
        stream=True,
    )
    assert stream.status_code == 200
    assert stream.headers["Transfer-Encoding"] == "chunked"
    lab.api("POST", CMS, body=configmap("default", "unrelated-" + name))
    lab.api("POST", CMS, body=configmap("default", name, {"watched": "yes"}))
    lab.api("PATCH", f"{CMS}/{name}", body={"data": {"k": "v"}}, content_type="application/merge-patch+json")
    lab.api("DELETE", f"{CMS}/{name}")
    events = read_events(stream, 3)
    stream.close()
    assert [event["type"] for event in events] == ["ADDED", "MODIFIED", "DELETED"]
    assert all(event["object"]["metadata"]["name"] == name for event in events)
    versions = [int(event["object"]["metadata"]["resourceVersion"]) for event in events]
    assert versions == sorted(versions) and versions[0] > int(start_rv)
    assert events[1]["object"]["data"] == {"k": "v"}


def test_watch_without_resource_version_starts_with_current_objects_and_times_out(lab, no_faults):
    started = time.monotonic()
    stream = lab.api("GET", "/api/v1/nodes", params={"watch": "1", "timeoutSeconds": "1"}, stream=True)
    events = [json.loads(line) for line in stream.iter_lines() if line]
    assert time.monotonic() - started < 60  # ended by timeoutSeconds=1: a watch without it never ends
    assert {event["object"]["metadata"]["name"] for event in events} >= {"master-0", "master-1", "master-2"}
    assert all(event["type"] == "ADDED" for event in events)


def test_too_old_resource_version_gets_410_gone(lab, no_faults):
    name = unique("churn")
    created = lab.api("POST", CMS, body=configmap("default", name)).json()
    old_rv = created["metadata"]["resourceVersion"]
    for index in range(SESSION_EVENT_WINDOW + 5):
        lab.api("PATCH", f"{CMS}/{name}", body={"data": {"i": str(index)}}, content_type="application/merge-patch+json")
    stream = lab.api(
        "GET", CMS, params={"watch": "true", "resourceVersion": old_rv, "timeoutSeconds": "5"}, stream=True
    )
    assert stream.status_code == 200
    events = [json.loads(line) for line in stream.iter_lines() if line]
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert status["kind"] == "Status" and status["code"] == 410 and status["reason"] == "Expired"
    assert status["message"].startswith(f"too old resource version: {old_rv} (")


def test_error_rate_fault_and_clear(lab, no_faults):
    labctl("fault", "--state", lab.state, "api_error_rate=1")
    response = lab.api("GET", "/api/v1/nodes")
    assert response.status_code in (500, 503)
    assert response.json()["kind"] == "Status" and response.json()["reason"] in ("InternalError", "ServiceUnavailable")
    labctl("fault", "--state", lab.state, "--clear")
    assert lab.api("GET", "/api/v1/nodes").status_code == 200


def test_reset_fault_drops_the_connection(lab, no_faults):
    lab.control("POST", "/faults", {"api_reset_rate": 1})
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.get(
            lab.api_url + "/api/v1/nodes",
            verify=lab.ca,
            timeout=5,
            headers={"Authorization": f"Bearer {lab.tokens['admin']}"},
        )
    lab.control("DELETE", "/faults")
    assert any(entry["status"] == "reset" for entry in lab.control("GET", "/requests"))


def test_delay_fault(lab, no_faults):
    lab.control("POST", "/faults", {"api_delay": 0.5})
    started = time.monotonic()
    assert lab.api("GET", "/version").status_code == 200
    assert time.monotonic() - started >= 0.5


def test_deny_fault_for_non_admin_and_for_everyone(lab, no_faults):
    lab.control("POST", "/faults", {"deny": "list:imagedigestmirrorsets"})
    idms = "/apis/config.openshift.io/v1/imagedigestmirrorsets"
    assert lab.api("GET", idms).status_code == 200
    assert lab.api("GET", idms, as_user="readonly").status_code == 403
    lab.control("POST", "/faults", {"deny": "all:update:certificatesigningrequests/approval,all:list:nodes"})
    response = lab.api("GET", "/api/v1/nodes")
    assert response.status_code == 403
    assert response.json()["message"] == (
        'nodes is forbidden: User "system:admin" cannot list resource "nodes" in API group "" at the cluster scope'
    )
    assert lab.api("GET", idms, as_user="readonly").status_code == 200


def test_unknown_fault_is_refused(lab, no_faults):
    result = labctl("fault", "--state", lab.state, "no_such_fault=1", check=False)
    assert result.returncode == 1 and "unknown fault" in result.stderr
    result = labctl("fault", "--state", lab.state, "api_error_rate=2", check=False)
    assert result.returncode == 1 and "between 0 and 1" in result.stderr


def test_watch_cut_fault_resets_streams(lab, no_faults):
    lab.control("POST", "/faults", {"watch_cut_seconds": 0.5})
    started = time.monotonic()
    stream = lab.api("GET", "/api/v1/nodes", params={"watch": "true", "timeoutSeconds": "30"}, stream=True)
    with pytest.raises(requests.exceptions.RequestException):
        for _line in stream.iter_lines():
            pass
    assert time.monotonic() - started < 25  # ended by the 0.5 s cut, not by the 30 s timeoutSeconds


def test_dump_has_objects_requests_and_approvals(lab):
    dump = json.loads(labctl("dump", "--state", lab.state).stdout)
    assert set(dump) >= {"objects", "requests", "approvals"}
    kinds = {obj["kind"] for obj in dump["objects"]}
    assert {"ClusterVersion", "Infrastructure", "Node", "Secret", "MachineConfig"} <= kinds


def test_concurrent_watch_and_writes_do_not_lose_events(lab, no_faults):
    start_rv = lab.api("GET", CMS).json()["metadata"]["resourceVersion"]
    names = [f"{unique('burst')}-{i}" for i in range(20)]
    stream = lab.api(
        "GET",
        CMS,
        params={"watch": "true", "resourceVersion": start_rv, "timeoutSeconds": "10", "labelSelector": "burst"},
        stream=True,
    )

    def write():
        for name in names:
            lab.api("POST", CMS, body=configmap("default", name, {"burst": "yes"}))

    writer = threading.Thread(target=write)
    writer.start()
    events = read_events(stream, len(names))
    writer.join()
    stream.close()
    assert [event["object"]["metadata"]["name"] for event in events] == names
