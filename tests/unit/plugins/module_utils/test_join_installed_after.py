# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A replaced host: the old installation's approved client CSR is neither its kubelet's key nor half a join."""

import datetime

from ansible_collections.openshift_agent.day2.plugins.module_utils._join.checks import Context
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.csr import parse_csr
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.expected import ExpectedNode
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.host_join import HostJoin
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.keys import client_keys
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils import csr_factory as f
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.csr_factory import MINUTE, NOW

HOST = {"name": "worker-0", "address": "127.0.111.20"}


def test_not_before_is_the_later_of_installed_after_and_the_agents_last_answer():
    host = HostJoin(dict(HOST, installed_after=None), 8090, NOW)
    assert host.not_before(0.0) is None
    host = HostJoin(dict(HOST, installed_after=NOW - 5 * MINUTE), 8090, NOW)
    assert host.not_before(3.0) == NOW - 5 * MINUTE + datetime.timedelta(seconds=3)
    host.progress.last_answer = NOW - MINUTE
    assert host.not_before(0.0) == NOW - MINUTE


def test_the_old_installations_approved_csr_is_not_the_kubelets_key():
    old = f.client_csr("worker-0", name="old", created=NOW - 30 * MINUTE, conditions=["Approved"])
    new = f.client_csr("worker-0", name="new", created=NOW - MINUTE)
    host = HostJoin(dict(HOST, installed_after=NOW - 10 * MINUTE), 8090, NOW)
    expected = ExpectedNode("worker-0", ["127.0.111.20"], (), host.not_before(0.0))
    ctx = Context({"worker-0": expected}, frozenset(), NOW, datetime.timedelta(seconds=2))
    keys = client_keys([parse_csr(obj) for obj in (old, new)], ctx, "worker-0")
    assert keys.problem("worker-0") is None and keys.approved == []
    assert [csr.name for csr in keys.to_approve] == ["new"] and set(keys.refused) == {"old"}
    # Without the bound the old approval is taken as the kubelet's key and the new CSR as a second key.
    unbounded = Context(
        {"worker-0": ExpectedNode("worker-0", ["127.0.111.20"], (), None)},
        frozenset(),
        NOW,
        datetime.timedelta(seconds=2),
    )
    keys = client_keys([parse_csr(obj) for obj in (old, new)], unbounded, "worker-0")
    assert "a second public key" in keys.problem("worker-0")
