# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_image.node_joiner: what earlier runs left (found by label, a live run's objects kept, removal failures named,
partial files) and _common.module: SIGTERM raises Terminated so that a run cleans up."""

import datetime
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import ApiAccessError
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.module import Terminated, signals_raise
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import node_joiner as nj

NOW = datetime.datetime(2026, 5, 1, 12, 0, tzinfo=datetime.timezone.utc)
HOST = socket.gethostname()


def dead_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_owner_tag_names_this_process_and_a_live_one_is_alive():
    tag = nj.owner_tag()
    assert tag.startswith("%s %d " % (HOST, os.getpid()))
    assert nj.owner_alive(tag) is True


def test_a_gone_process_or_a_reused_pid_is_not_alive():
    assert nj.owner_alive("%s %d 1" % (HOST, dead_pid())) is False
    assert nj.owner_alive("%s %d 1" % (HOST, os.getpid())) is False  # same pid, other start time


def test_a_killed_run_that_no_one_reaped_is_not_alive():
    # SIGKILL of a run in a container whose init does not reap orphans: its process stays a zombie.
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        tag = nj.owner_tag(child.pid)
        assert nj.owner_alive(tag) is True
        child.kill()
        for _poll in range(500):  # until the kernel made it a zombie (never reaped here before the assertion)
            with open("/proc/%d/stat" % child.pid) as handle:
                if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
            time.sleep(0.01)
        assert nj.owner_alive(tag) is False
    finally:
        child.kill()
        child.wait()


def test_another_host_or_no_tag_cannot_be_told():
    assert nj.owner_alive("elsewhere.example %d 5" % os.getpid()) is None
    assert nj.owner_alive(None) is None and nj.owner_alive("garbage") is None


def namespace(name, owner=None, age=0, deleting=False):
    meta = {
        "name": name,
        "creationTimestamp": (NOW - datetime.timedelta(seconds=age)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "annotations": {nj.OWNER_ANNOTATION: owner} if owner else {},
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-05-01T11:59:00Z"
    return {"kind": "Namespace", "metadata": meta}


def test_is_left_over_by_owner_else_by_age():
    assert nj.is_left_over(namespace("a", "%s %d 1" % (HOST, dead_pid())), NOW, 3600) is True
    assert nj.is_left_over(namespace("b", nj.owner_tag()), NOW, 3600) is False
    assert nj.is_left_over(namespace("c", "other-host 1 1", age=60), NOW, 3600) is False
    assert nj.is_left_over(namespace("d", "other-host 1 1", age=7200), NOW, 3600) is True
    assert nj.is_left_over(namespace("e", age=7200), NOW, 3600) is True


class Api:
    """Lists by resource (the path before the query); deletes raise an ApiAccessError for names in ``deny``."""

    def __init__(self, namespaces, roles=(), bindings=(), deny=()):
        self.lists = {
            "/api/v1/namespaces": namespaces,
            "/apis/rbac.authorization.k8s.io/v1/clusterroles": [{"metadata": {"name": n}} for n in roles],
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings": [{"metadata": {"name": n}} for n in bindings],
        }
        self.deny = deny
        self.paths, self.deleted = [], []

    def get(self, target):
        self.paths.append(target.path)
        return {"items": self.lists[target.path.split("?")[0]]}

    def delete(self, target):
        if target.name in self.deny and target.resource == "namespaces":
            raise ApiAccessError('namespaces "%s" is forbidden: denied' % target.name, 403, target)
        self.deleted.append("%s/%s" % (target.resource, target.name))
        return True


P = nj.NAMESPACE_PREFIX


def test_find_takes_finished_runs_and_orphans_and_keeps_live_runs():
    gone = "%s %d 1" % (HOST, dead_pid())
    api = Api(
        [namespace(P + "old", gone), namespace(P + "live", nj.owner_tag()),
         namespace(P + "going", deleting=True), namespace("not-ours", gone)],
        roles=[P + "old", P + "live", P + "orphan"],
        bindings=[P + "old", P + "live"],
    )  # fmt: skip
    found = nj.find_leftovers(api, NOW, 3600)
    assert found == [
        ("ClusterRoleBinding", P + "old"),
        ("ClusterRole", P + "old"),
        ("ClusterRole", P + "orphan"),
        ("Namespace", P + "old"),
    ]
    assert all("labelSelector=app.kubernetes.io%2Fmanaged-by%3Dopenshift_agent.day2%2C" in p for p in api.paths)
    assert nj.remove_leftovers(api, found) == ["ClusterRoleBinding/%sold" % P, "ClusterRole/%sold" % P,
                                               "ClusterRole/%sorphan" % P, "Namespace/%sold" % P]  # fmt: skip


def test_a_removal_that_fails_is_an_error_naming_the_objects():
    api = Api([], deny=(P + "old",))
    with pytest.raises(nj.LeftoverError) as caught:
        nj.remove_leftovers(api, [("ClusterRole", P + "old"), ("Namespace", P + "old")])
    assert caught.value.result["leftovers"] == ["Namespace/%sold" % P]
    assert caught.value.result == {"leftovers": ["Namespace/%sold" % P]}
    message = caught.value.message
    assert "Namespace/%sold: namespaces" % P in message and "oc delete namespace %sold" % P in message
    assert api.deleted == ["clusterroles/%sold" % P]  # the others are still removed


def test_partial_files_of_this_module_only_are_removed(tmp_path):
    pxe = tmp_path / "boot-artifacts" / "x86_64"
    pxe.mkdir(parents=True)
    ours = [tmp_path / ".node.x86_64.iso.abc.part", tmp_path / ".node.x86_64.iso.json.k2.tmp",
            tmp_path / ".agentconfig.noarch.iso.x1.part", pxe / ".initrd.img.q.part",
            tmp_path / "boot-artifacts" / ".x86_64.json.z.tmp"]  # fmt: skip
    theirs = [tmp_path / ".bashrc.tmp", tmp_path / "node.x86_64.iso", tmp_path / "keep.part", pxe / "initrd.img",
              tmp_path / ".agentconfig.noarch.iso"]  # fmt: skip
    for path in ours + theirs:
        path.write_text("x")
    assert sorted(nj.remove_partial_files(str(tmp_path), "boot-artifacts")) == sorted(str(p) for p in ours)
    assert all(p.exists() for p in theirs) and not any(p.exists() for p in ours)
    assert nj.remove_partial_files(str(tmp_path / "missing"), "boot-artifacts") == []


# ----- interrupt -----------------------------------------------------------------------------------
def test_sigterm_raises_terminated_inside_and_the_handler_comes_back_after():
    before = signal.getsignal(signal.SIGTERM)
    cleaned = []
    with pytest.raises(Terminated) as caught, signals_raise():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # a second one during the clean-up is ignored
            cleaned.append(True)
    assert caught.value.name == "SIGTERM" and cleaned == [True]
    assert signal.getsignal(signal.SIGTERM) == before


def test_terminated_is_not_an_exception_so_retry_loops_do_not_swallow_it():
    assert not issubclass(Terminated, Exception) and issubclass(Terminated, BaseException)
