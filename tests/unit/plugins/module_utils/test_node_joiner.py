# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)


import errno
import json
import os
import types

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.releases import release
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import node_joiner as nj
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import pod_exec as _pod_exec

ZERO = "0001-01-01T00:00:00Z"
NAMESPACE = {"metadata": {"name": "openshift-node-joiner-abcde", "uid": "uid-1"}}


def stage(stage_id, end=ZERO, result=None, subs=None):
    entry = {"id": stage_id, "description": stage_id.upper(), "start_time": "2025-01-01T00:00:00Z", "end_time": end}
    if result:
        entry["result"] = result
    if subs:
        entry["sub_stages"] = subs
    return entry


FAILED_REPORT = {
    "id": "report-addnodes-202501010000",
    "start_time": "2025-01-01T00:00:00Z",
    "end_time": "2025-01-01T00:00:03Z",
    "stages": [
        stage("add-nodes-cluster-inspection", "2025-01-01T00:00:01Z", result='{"Version":"4.18.1"}'),
        stage("create-manifest", "2025-01-01T00:00:02Z"),
        stage(
            "fetch-base-iso",
            "2025-01-01T00:00:03Z",
            subs=[
                stage("fetch-base-iso.extract-image", "2025-01-01T00:00:03Z"),
                stage("fetch-base-iso.download-image", "2025-01-01T00:00:03Z"),
            ],
        ),
    ],
    "result": {
        "exit_code": 1,
        "error_message": "no such host",
        "detailed_error_message": "failed to fetch Agent Installer ISO: no such host",
    },
}


def test_stages_of_a_running_report():
    report = {
        "stages": [stage("add-nodes-cluster-inspection", "2025-01-01T00:00:01Z"), stage("create-manifest")],
        "end_time": ZERO,
        "result": None,
    }
    rows = nj.summarize_stages(report)
    expected = [("add-nodes-cluster-inspection", "done"), ("create-manifest", "running")]
    assert [(r["id"], r["status"]) for r in rows] == expected
    assert rows[1]["end_time"] is None and "result" not in rows[0]


def test_stages_of_a_failed_report_mark_the_last_stage_and_sub_stage():
    rows = nj.summarize_stages(FAILED_REPORT)
    assert [(r["id"], r["status"]) for r in rows] == [
        ("add-nodes-cluster-inspection", "done"),
        ("create-manifest", "done"),
        ("fetch-base-iso", "failed"),
        ("fetch-base-iso.extract-image", "done"),
        ("fetch-base-iso.download-image", "failed"),
    ]
    assert rows[0]["result"] == '{"Version":"4.18.1"}'


def test_no_report_no_stages():
    assert nj.summarize_stages(None) == [] and nj.summarize_stages({}) == []


def test_failure_message_names_the_stage_and_both_errors():
    message = nj.failure_message(FAILED_REPORT)
    assert message.startswith(
        "node-joiner failed at stage fetch-base-iso.download-image (FETCH-BASE-ISO.DOWNLOAD-IMAGE)"
    )
    assert "no such host (failed to fetch Agent Installer ISO: no such host)" in message


def test_describe_failure_carries_stages_and_log_tail():
    text = nj.describe_failure("it broke", nj.summarize_stages(FAILED_REPORT), "line 1\nline 2\n")
    lines = text.splitlines()
    assert lines[0] == "it broke"
    assert lines[1].startswith("node-joiner stages: add-nodes-cluster-inspection done, create-manifest done")
    assert lines[-2:] == ["line 1", "line 2"]
    assert nj.describe_failure("only this", [], "  \n") == "only this"


def test_manifests_are_labelled_owned_and_restricted():
    account, role, binding = nj.rbac_manifests(NAMESPACE, "run1", release((4, 21)))
    assert account["metadata"] == {
        "name": "node-joiner",
        "namespace": "openshift-node-joiner-abcde",
        "labels": nj.labels("run1"),
    }
    for obj in (role, binding):
        owner = {"apiVersion": "v1", "kind": "Namespace", "name": "openshift-node-joiner-abcde", "uid": "uid-1"}
        assert obj["metadata"]["ownerReferences"] == [owner]
        assert obj["metadata"]["labels"][nj.MANAGED_BY_LABEL] == nj.MANAGED_BY
    assert binding["subjects"][0] == {
        "kind": "ServiceAccount",
        "name": "node-joiner",
        "namespace": "openshift-node-joiner-abcde",
    }
    proxy = {"http_proxy": "http://p:3128", "https_proxy": "", "no_proxy": ".cluster.local"}  # the facts' proxy_status
    pod = nj.node_joiner_pod_manifest(NAMESPACE, "run1", "img", nj.node_joiner_command(True), proxy)
    container = pod["spec"]["containers"][0]
    assert container["env"] == [
        {"name": "HTTP_PROXY", "value": "http://p:3128"},
        {"name": "NO_PROXY", "value": ".cluster.local"},
    ]
    assert "--pxe --dir=/assets" in container["command"][-1] and container["command"][-1].endswith("sleep 600")
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert pod["spec"]["restartPolicy"] == "Never"
    assert nj.namespace_manifest("r")["metadata"]["annotations"] == {"openshift.io/node-selector": ""}


def test_image_lookups():
    assert (
        nj.installer_image_from_configmap({"data": {"images.json": '{"installer": "quay.io/x@sha256:1"}'}})
        == "quay.io/x@sha256:1"
    )
    assert nj.installer_image_from_configmap({"data": {"images.json": "not json"}}) is None
    assert nj.installer_image_from_configmap(None) is None
    stream = {
        "spec": {
            "tags": [{"name": "cli", "from": {"name": "a"}}, {"name": "baremetal-installer", "from": {"name": "b"}}]
        }
    }
    assert nj.node_joiner_image_from_references(json.dumps(stream)) == "b"
    with pytest.raises(nj.RunError):
        nj.node_joiner_image_from_references(json.dumps({"spec": {"tags": []}}))
    with pytest.raises(nj.RunError):
        nj.node_joiner_image_from_references("{")


@pytest.mark.parametrize(
    "status,code",
    [
        ({"metadata": {}, "status": "Success"}, 0),
        ({"status": "Failure", "details": {"causes": [{"reason": "ExitCode", "message": "3"}]}}, 3),
        ({"status": "Failure", "message": "exec failed"}, 1),
        ({"status": "Failure", "details": {"causes": [{"reason": "ExitCode", "message": "x"}]}}, 1),
    ],
)
def test_exit_code_from_channel_3_status(status, code):
    assert _pod_exec.exit_code(status) == code


def test_refused_exec_upgrade_says_why():
    class Refused(Exception):
        status_code = 403
        resp_body = json.dumps({"kind": "Status", "message": 'pods "p" is forbidden: cannot create "pods/exec"'})

    assert _pod_exec._handshake_problem(Refused("Handshake status 403")) == (
        'HTTP 403: pods "p" is forbidden: cannot create "pods/exec": the identity needs \'create\' on pods/exec'
    )
    assert _pod_exec._handshake_problem(ValueError("boom")) == "boom"


# ----- fetch: verified copy, one retry, nothing partial ---------------------------------------------
class FakePod:
    """Stands in for the exec calls of NodeJoinerRun.fetch: each transfer is one scripted outcome."""

    def __init__(self, content, outcomes):
        self.content = content
        self.outcomes = list(outcomes)

    def copy_file(self, pod, _path, fileobj, timeout=0):
        assert (pod.namespace, pod.name) == ("openshift-node-joiner-abcde", "node-joiner")
        outcome = self.outcomes.pop(0)
        if outcome == "cut":
            fileobj.write(self.content[:10])
            raise _pod_exec.ExecError("connection cut")
        if outcome == "efbig":
            raise OSError(errno.EFBIG, "File too large")
        data = self.content if outcome == "ok" else b"X" + self.content[1:]
        fileobj.write(data)
        import hashlib

        return len(data), hashlib.sha256(data).hexdigest()


@pytest.fixture
def fetcher(monkeypatch):
    import hashlib

    def make(outcomes, content=b"iso bytes" * 1000):
        pod = FakePod(content, outcomes)
        monkeypatch.setattr(_pod_exec, "copy_file", pod.copy_file)
        running = {"status": {"phase": "Running"}}  # a failed transfer of a running pod stays what it is
        run = nj.NodeJoinerRun(types.SimpleNamespace(configuration=None, get=lambda _target: running), "r")
        run.namespace = NAMESPACE
        monkeypatch.setattr(_pod_exec, "remote_sha256", lambda *_args: hashlib.sha256(content).hexdigest())
        return run, pod

    return make


@pytest.mark.parametrize("outcomes", [["ok"], ["cut", "ok"], ["corrupt", "ok"]])
def test_fetch_succeeds_within_two_attempts(fetcher, tmp_path, outcomes):
    run, pod = fetcher(outcomes)
    size, _digest = run.fetch("/assets/node.x86_64.iso", str(tmp_path / "node.iso"))
    assert (tmp_path / "node.iso").read_bytes() == pod.content and size == len(pod.content)
    assert oct(os.stat(str(tmp_path / "node.iso")).st_mode & 0o777) == "0o600"
    assert os.listdir(str(tmp_path)) == ["node.iso"] and pod.outcomes == []


@pytest.mark.parametrize(
    "outcomes,message",
    [
        (["cut", "cut"], "transfer of /assets/node.x86_64.iso interrupted: connection cut (after 2 attempts)"),
        (["cut", "corrupt"], "checksum mismatch for /assets/node.x86_64.iso"),
        (["efbig"], "no space left to write node.iso"),
    ],
)
def test_fetch_failures_leave_nothing(fetcher, tmp_path, outcomes, message):
    run, _pod = fetcher(outcomes)
    with pytest.raises(_pod_exec.ExecError) as caught:
        run.fetch("/assets/node.x86_64.iso", str(tmp_path / "node.iso"))
    assert message in str(caught.value)
    assert os.listdir(str(tmp_path)) == []


def test_finish_edits_the_copy_before_the_rename(fetcher, tmp_path):
    run, _pod = fetcher(["ok"])
    seen = []

    def finish(temp_path):
        seen.append(os.path.basename(temp_path))
        assert not (tmp_path / "node.iso").exists()
        with open(temp_path, "ab") as handle:
            handle.write(b"+kargs")

    run.fetch("/assets/node.x86_64.iso", str(tmp_path / "node.iso"), finish=finish)
    assert seen[0].startswith(".node.iso.") and seen[0].endswith(".part")
    assert (tmp_path / "node.iso").read_bytes().endswith(b"+kargs")


# ----- per-release behaviour: ClusterRole, completion signal, fatal log lines ---------------------------------
def test_cluster_role_rules_follow_oc_of_the_release():
    def groups(minor):
        return {
            (rule["apiGroups"][0], resource)
            for rule in nj.cluster_role_rules(release(minor))
            for resource in rule["resources"]
        }

    for minor in ((4, 17), (4, 18), (4, 20)):
        assert ("config.openshift.io", "imagecontentpolicies") in groups(minor)
        assert ("operator.openshift.io", "imagecontentsourcepolicies") not in groups(minor)
    assert ("operator.openshift.io", "imagecontentsourcepolicies") in groups((4, 21))
    assert ("config.openshift.io", "imagecontentpolicies") not in groups((4, 21))
    assert ("", "secrets") in groups((4, 17)) and ("certificates.k8s.io", "certificatesigningrequests") in groups(
        (4, 21)
    )


def test_report_is_completed_when_its_end_time_or_its_result_is_set():
    running = {"end_time": ZERO, "result": None, "stages": []}
    assert not nj.report_completed(running) and not nj.report_completed(None)
    # a result without end_time (a run that failed before its first stage) completes it too, unlike oc's signal
    assert nj.report_completed(dict(running, result={"exit_code": 1}))
    done = dict(running, end_time="2025-01-01T00:05:00Z", result={"exit_code": 0})
    assert nj.report_exit_code(done) == 0 and nj.report_completed(done)
    no_result = dict(running, end_time="2025-01-01T00:05:00Z")
    assert nj.report_exit_code(no_result) is None and nj.report_completed(no_result)  # completed, failed
    assert "without a result" in nj.failure_message(no_result)


@pytest.mark.parametrize(
    "log, line",
    [
        (
            'time="2025-01-01T00:00:00Z" level=info msg="x"\n'
            'time="2025-01-01T00:00:01Z" level=fatal msg="unknown flag: --pxe"\n',
            'time="2025-01-01T00:00:01Z" level=fatal msg="unknown flag: --pxe"',
        ),
        ("Error: unknown flag: --pxe\nUsage:\n  node-joiner add-nodes [flags]\n", "Error: unknown flag: --pxe"),
        (
            "panic: runtime error: index out of range [0] with length 0 [recovered]\ngoroutine 1 [running]:\n",
            "panic: runtime error: index out of range [0] with length 0 [recovered]",
        ),
        ('level=debug msg="Error: not at the start"\nlevel=info msg="done"\n', None),
        ("", None),
    ],
)
def test_fatal_line(log, line):
    assert nj.fatal_line(log) == line


def test_unknown_flag_message_names_the_cause():
    message = nj.ended_without_result("Error: unknown flag: --pxe")
    assert "stopped without writing /assets/exit_code" in message and "4.17 node-joiner has no --pxe" in message
    assert "without writing a result into /assets/report.json" in nj.ended_without_result("panic: x", False)


@pytest.mark.parametrize(
    "line, message",
    [
        ("time=2025-01-01T00:00:00Z level=fatal msg=failed to fetch: boom", "failed to fetch: boom"),
        ('time="2025-01-01T00:00:00Z" level=fatal msg="unknown flag: --pxe"', "unknown flag: --pxe"),
        ('time="x" level=fatal msg="a \\"quoted\\" word"', 'a "quoted" word'),
        ("Error: unknown flag: --pxe", "Error: unknown flag: --pxe"),
    ],
)
def test_fatal_message_is_logrus_msg(line, message):
    assert nj.fatal_message(line) == message


class ScriptedPod:
    """exec and pod-log answers of a node-joiner pod, one scripted state per poll."""

    def __init__(self, states):
        self.states = list(states)
        self.state = self.states.pop(0)
        self.calls = []

    def advance(self, _seconds):
        if self.states:
            self.state = self.states.pop(0)

    def exec(self, command, timeout=120):
        self.calls.append(command[-1])
        content = self.state.get(command[-1].rsplit("/", 1)[-1])
        if content is None:
            return _pod_exec.ExecResult(1, b"", b"cat: no such file")
        return _pod_exec.ExecResult(0, content.encode(), b"")

    def log(self, _pod, lines=40):
        return self.state.get("log", "")


@pytest.fixture
def scripted(monkeypatch):
    def make(states, timeout=60):
        pod = ScriptedPod(states)

        class Api:
            @staticmethod
            def get(_target):
                return {"status": {"phase": "Running"}}

        run = nj.NodeJoinerRun(Api(), "r", build_timeout=timeout, wait_sleep=5, sleeper=pod.advance)
        run.namespace = NAMESPACE
        monkeypatch.setattr(run, "exec", pod.exec)
        monkeypatch.setattr(run, "pod_log_tail", pod.log)
        return run, pod

    return make


def test_4_18_waits_for_the_report_end_time(scripted):
    running = json.dumps({"end_time": ZERO, "result": None, "stages": [stage("create-manifest")]})
    done = json.dumps(dict(FAILED_REPORT, result={"exit_code": 0}))
    run, pod = scripted([{"report.json": running, "exit_code": "0"}, {"report.json": running}, {"report.json": done}])
    report, code = run.wait_report()
    assert code == 0 and report["end_time"] == "2025-01-01T00:00:03Z"
    assert pod.calls == ["/assets/report.json"] * 3  # exit_code is not what 4.18+ completion means


SSH_KEY_ERROR = (
    'sshKey: Invalid value: "not a valid ssh key": ssh: no key found; last parsing error for ignored line: '
    "illegal base64 data at input byte 4"
)
# What node-joiner 4.18+ writes when nodes-config is refused at load: a result, no stage, end_time Go's zero time.
LOAD_FAILURE = {
    "id": "report-addnodes-202501010000",
    "start_time": ZERO,
    "end_time": ZERO,
    "result": {
        "exit_code": 1,
        "error_message": SSH_KEY_ERROR,
        "detailed_error_message": 'failed to fetch Agent Installer ISO: failed to load asset "AddNodes Config": '
        + SSH_KEY_ERROR,
    },
}


def test_4_18_a_failure_before_the_first_stage_ends_the_wait_at_once(scripted):
    log = "time=2025-01-01T00:00:00Z level=fatal msg=" + LOAD_FAILURE["result"]["detailed_error_message"] + "\n"
    run, pod = scripted([{"report.json": json.dumps(LOAD_FAILURE), "exit_code": "1", "log": log}], timeout=3600)
    report, code = run.wait_report()
    assert code == 1 and report["result"]["error_message"] == SSH_KEY_ERROR
    assert pod.calls == ["/assets/report.json"]  # no sleep: the first look is the last
    message = nj.failure_message(report)
    assert message.startswith("node-joiner failed: " + SSH_KEY_ERROR) and "at stage" not in message


def test_4_18_node_joiner_gone_without_a_result_fails_at_once(scripted):
    """A panic before Complete() (no result, no exit_code): the log says node-joiner exited; no sleep waited out."""
    log = "panic: runtime error: index out of range [0] with length 0 [recovered]\ngoroutine 1 [running]:\n"
    running = json.dumps({"end_time": ZERO, "result": None, "stages": [stage("add-nodes-cluster-inspection")]})
    run, pod = scripted([{"report.json": running}, {"report.json": running, "log": log}], timeout=3600)
    with pytest.raises(nj.RunError) as caught:
        run.wait_report()
    assert "without writing a result into /assets/report.json" in str(caught.value) and "panic:" in str(caught.value)
    assert (
        caught.value.result["stages"][0]["id"] == "add-nodes-cluster-inspection"
        and caught.value.result["log_tail"] == log
    )
    assert pod.calls == ["/assets/report.json"] * 3  # one sleep, then the re-read after the fatal line


def test_4_18_fatal_line_just_after_the_result_was_written(scripted):
    """The log shows the fatal line of a run whose result this look missed: the re-read finds it."""
    run, _pod = scripted([{"log": "level=fatal msg=x"}])
    reads = iter([None, json.dumps(LOAD_FAILURE)])
    original = _pod_exec.ExecResult

    def exec_(command, timeout=120):
        value = next(reads)
        return original(0, value.encode(), b"") if value else original(1, b"", b"")

    run.exec = exec_
    assert run.wait_report()[1] == 1


def test_4_17_polls_exit_code(scripted):
    run, pod = scripted([{"log": "level=info msg=working"}, {"exit_code": "1", "log": "level=fatal msg=boom"}])
    assert run.wait_report(exit_code_only=True) == (None, 1)
    assert "/assets/report.json" not in pod.calls


def test_4_17_fails_fast_when_node_joiner_stopped_without_exit_code(scripted):
    log = "Error: unknown flag: --pxe\nUsage:\n  node-joiner add-nodes [flags]\n"
    run, pod = scripted([{"log": "level=info msg=starting"}, {"log": log}], timeout=3600)
    with pytest.raises(nj.RunError) as caught:
        run.wait_report(exit_code_only=True)
    assert "Error: unknown flag: --pxe" in str(caught.value) and caught.value.result["log_tail"] == log
    assert pod.calls == ["/assets/exit_code"] * 3  # one poll, then the re-check after the fatal line


def test_4_17_fatal_line_with_exit_code_written_just_before(scripted):
    run, _pod = scripted([{"exit_code": None, "log": "level=fatal msg=x"}])
    states = iter([None, "1"])
    original = _pod_exec.ExecResult

    def exec_(command, timeout=120):
        value = next(states)
        return original(0, value.encode(), b"") if value else original(1, b"", b"")

    run.exec = exec_
    assert run.wait_report(exit_code_only=True) == (None, 1)


# ----- the run's objects: created as oc creates them, deleted at the end, kept only for debugging -------------
class RecordingApi:
    """Creates (the namespace gets its generated name and uid) and deletes by path; ``refuse`` names paths whose
    delete is forbidden."""

    def __init__(self, refuse=()):
        self.calls, self.refuse = [], refuse

    def create(self, target, body):
        self.calls.append(("create", target.path, body["kind"]))
        return dict(body, metadata=dict(body["metadata"], name="openshift-node-joiner-abcde", uid="uid-1"))

    def delete(self, target):
        self.calls.append(("delete", target.path, target.resource))
        if target.path in self.refuse:
            raise nj.k8s.ApiAccessError("forbidden: %s" % target.path, 403, target)
        return True


RBAC_PATH = "/apis/rbac.authorization.k8s.io/v1/"


def test_a_run_creates_its_objects_in_oc_order_and_deletes_them_all():
    api = RecordingApi()
    with nj.NodeJoinerRun(api, "r1", release((4, 17))) as run:
        assert run.ns_name == "openshift-node-joiner-abcde"
    assert api.calls == [
        ("create", "/api/v1/namespaces", "Namespace"),
        ("create", "/api/v1/namespaces/openshift-node-joiner-abcde/serviceaccounts", "ServiceAccount"),
        ("create", RBAC_PATH + "clusterroles", "ClusterRole"),
        ("create", RBAC_PATH + "clusterrolebindings", "ClusterRoleBinding"),
        ("delete", RBAC_PATH + "clusterrolebindings/openshift-node-joiner-abcde", "clusterrolebindings"),
        ("delete", RBAC_PATH + "clusterroles/openshift-node-joiner-abcde", "clusterroles"),
        ("delete", "/api/v1/namespaces/openshift-node-joiner-abcde", "namespaces"),
    ]
    assert run.cleaned_up is True and run.left == [] and run.kept is False


def test_a_failed_run_is_kept_with_keep_on_failure_and_a_refused_delete_is_named():
    api = RecordingApi()
    with pytest.raises(nj.RunError), nj.NodeJoinerRun(api, "r1", keep_on_failure=True) as run:
        raise nj.RunError("node-joiner failed")
    assert run.kept is True and not [call for call in api.calls if call[0] == "delete"]
    api = RecordingApi(refuse=("/api/v1/namespaces/openshift-node-joiner-abcde",))
    with nj.NodeJoinerRun(api, "r1") as run:
        pass
    assert run.left == ["Namespace/openshift-node-joiner-abcde"] and run.cleaned_up is False
    assert run.cleanup_failures == ["forbidden: /api/v1/namespaces/openshift-node-joiner-abcde"]


# ----- the pod's real cause of death, from its status and Events ---------------------------------------------
POD_PATH = "/api/v1/namespaces/openshift-node-joiner-abcde/pods/node-joiner"
EVENTS_PATH = "/api/v1/namespaces/openshift-node-joiner-abcde/events"
IMAGE = "quay.io/example/node-joiner-typo:4.18"


def pod(status, limits=None):
    container = {"name": "node-joiner", "image": IMAGE, "resources": {"limits": limits} if limits else {}}
    metadata = {"name": "node-joiner", "namespace": "openshift-node-joiner-abcde"}
    return {"metadata": metadata, "spec": {"nodeName": "master-0", "containers": [container]}, "status": status}


def terminated(reason, code, message=None):
    state = {"terminated": dict({"reason": reason, "exitCode": code}, **({"message": message} if message else {}))}
    return {"phase": "Failed", "containerStatuses": [{"name": "node-joiner", "image": IMAGE, "state": state}]}


def waiting(reason, message):
    state = {"waiting": {"reason": reason, "message": message}}
    return {"phase": "Pending", "containerStatuses": [{"name": "node-joiner", "image": IMAGE, "state": state}]}


def event(kind, reason, message, name="node-joiner"):
    return {"type": kind, "reason": reason, "message": message, "involvedObject": {"kind": "Pod", "name": name}}


WHERE = "pod openshift-node-joiner-abcde/node-joiner on node master-0"
NO_LIMIT = "neither oc adm node-image nor this collection sets one"
PULL_ERROR = (
    'Failed to pull image "%s": reading manifest 4.18 in quay.io/example/node-joiner-typo: unauthorized' % IMAGE
)


@pytest.mark.parametrize(
    "status, limits, events, expected",
    [
        ({"phase": "Running"}, None, [], None),
        (waiting("ContainerCreating", ""), None, [], None),
        (
            terminated("OOMKilled", 137),
            None,
            [],
            WHERE + ": container node-joiner was killed by the OOM killer (OOMKilled, exit code 137): it had no memory "
            "limit (%s), so node master-0 ran out of memory: free memory there, then run again" % NO_LIMIT,
        ),
        (
            terminated("OOMKilled", 137),
            {"memory": "512Mi"},
            [],
            "(OOMKilled, exit code 137): its memory limit 512Mi was set in the cluster (%s: a LimitRange" % NO_LIMIT,
        ),
        (
            terminated("Error", 2, "boom"),
            None,
            [],
            WHERE + ": container node-joiner unexpectedly terminated: exit code: 2, reason: Error, message: boom",
        ),
        (
            {"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory. "},
            None,
            [],
            WHERE + " was evicted by the kubelet: The node was low on resource: memory. (free memory on node master-0",
        ),
        (
            {
                "phase": "Failed",
                "reason": "Evicted",
                "message": 'Usage of EmptyDir volume "assets" exceeds the limit "4Gi". ',
            },
            None,
            [],
            'exceeds the limit "4Gi". (node-joiner wrote more than the 4Gi oc gives /assets; no setting changes that)',
        ),
        (
            waiting("ImagePullBackOff", 'Back-off pulling image "%s"' % IMAGE),
            None,
            [
                event("Warning", "Failed", PULL_ERROR),
                event("Normal", "BackOff", "Back-off"),
                event("Warning", "x", "y"),
            ],
            "image pull failure: %s cannot pull %s from quay.io (ImagePullBackOff: %s). Check"
            % (WHERE, IMAGE, PULL_ERROR),
        ),
        (
            waiting("InvalidImageName", "Failed to apply default image tag"),
            None,
            [],
            "(InvalidImageName: Failed to apply default image tag). Check that the registry serves the image",
        ),
    ],
    ids=["running", "creating", "oom", "oom-limit", "exit", "evicted", "emptydir", "pull", "invalid"],
)
def test_pod_problem_names_the_cause_and_the_setting(status, limits, events, expected):
    found = nj.pod_problem(pod(status, limits), events)
    assert found is None if expected is None else expected in found
    assert expected is None or ("day2_node_joiner_image" in found) == ("Check" in expected)


@pytest.mark.parametrize(
    "image, registry",
    [
        ("quay.io/a/b:1", "quay.io"),
        ("mirror:5000/a@sha256:1", "mirror:5000"),
        ("localhost/a", "localhost"),
        ("a/b", "docker.io"),
    ],
)
def test_registry_of_an_image(image, registry):
    assert nj.registry(image) == registry


class PodApi:
    """GETs of the pod (one scripted status per read) and of the namespace's Events; ``deny_events`` answers 403."""

    def __init__(self, statuses, events=(), deny_events=False):
        self.statuses, self.events, self.deny_events, self.asked = list(statuses), list(events), deny_events, []

    def get(self, target):
        self.asked.append(target.path)
        if target.path == EVENTS_PATH:
            if self.deny_events:
                raise nj.k8s.ApiAccessError("forbidden", 403, target)
            return {"items": self.events}
        return pod(self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0])


def waited_run(api, timeout=60):
    run = nj.NodeJoinerRun(api, "r", pod_start_timeout=timeout, wait_sleep=5, sleeper=lambda _s: None)
    run.namespace = NAMESPACE
    run.pod_log_tail = lambda _pod, lines=40: "last log line"
    return run


def test_a_pull_error_oc_retries_is_waited_out_then_named_with_its_event(monkeypatch):
    api = PodApi([waiting("ErrImagePull", "manifest unknown")], [event("Warning", "Failed", PULL_ERROR)])
    run = waited_run(api, timeout=12)
    with pytest.raises(nj.RunError) as caught:
        run.wait_started("node-joiner", ("Running",))
    assert caught.value.message.endswith("(pod_start_timeout 12s passed)") and PULL_ERROR in caught.value.message
    assert (
        api.asked.count(POD_PATH) > 2 and api.asked.count(EVENTS_PATH) == 1 and caught.value.result["log_tail"] is None
    )


def test_an_invalid_image_name_fails_at_once_and_events_may_be_forbidden():
    api = PodApi([waiting("InvalidImageName", "couldn't parse image name")], deny_events=True)
    with pytest.raises(nj.RunError) as caught:
        waited_run(api).wait_started("node-joiner", ("Running",))
    assert "(InvalidImageName: couldn't parse image name)" in caught.value.message
    assert api.asked == [POD_PATH, EVENTS_PATH] and "passed" not in caught.value.message


def test_an_oom_killed_pod_is_named_instead_of_the_exec_error():
    """Exec into a pod the OOM killer ended fails (the API server: a completed pod); the run says why it ended."""
    api = PodApi([terminated("OOMKilled", 137)])
    run = waited_run(api)
    run.stages = [{"id": "fetch-base-iso.extract-image", "status": "running"}]

    def refused():
        raise _pod_exec.ExecError("cannot exec into a container in a completed pod; current phase is Failed")

    with pytest.raises(nj.RunError) as caught:
        run._in_pod(refused)
    assert "was killed by the OOM killer (OOMKilled, exit code 137)" in caught.value.message
    assert "completed pod" not in caught.value.message and caught.value.result["stages"] == run.stages
    assert caught.value.result["log_tail"] == "last log line"
    with pytest.raises(_pod_exec.ExecError):  # a running pod: the exec error as it is
        waited_run(PodApi([{"phase": "Running"}]))._in_pod(refused)
