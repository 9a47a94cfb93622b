# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The client CSRs of one joining host by public key (keys.client_keys), and what a half-joined Node is."""

import datetime

from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.health import health
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.nodes import never_ready, node_summary
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.checks import Context
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.csr import parse_csr
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.expected import ExpectedNode
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.keys import client_keys
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils import csr_factory as f
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.csr_factory import MINUTE, NOW

APPROVED = ["Approved"]


def view(objs, not_before=None):
    node = ExpectedNode("worker-0", ["127.0.111.20"], (), not_before)
    ctx = Context({"worker-0": node}, frozenset(), NOW, datetime.timedelta(seconds=2))
    return client_keys([parse_csr(obj) for obj in objs], ctx, "worker-0")


def test_a_replay_carries_the_same_key_and_both_are_approved():
    key = f.make_key()
    genuine = f.client_csr("worker-0", key=key, name="genuine", created=NOW - 2 * MINUTE)
    replay = f.client_csr("worker-0", key=key, name="replay", created=NOW - MINUTE)
    keys = view([genuine, replay])
    assert [csr.name for csr in keys.to_approve] == ["genuine", "replay"]
    assert keys.problem("worker-0") is None


def test_two_pending_keys_approve_nothing_and_name_both():
    keys = view([f.client_csr("worker-0", name="a"), f.client_csr("worker-0", name="b")])
    assert keys.to_approve == []
    problem = keys.problem("worker-0")
    assert "2 different public keys" in problem and "a (requested by" in problem and "b (requested by" in problem


def test_a_second_key_after_the_approval_names_only_the_rogue():
    key = f.make_key()
    genuine = f.client_csr("worker-0", key=key, name="genuine", conditions=APPROVED)
    again = f.client_csr("worker-0", key=key, name="again")
    rogue = f.client_csr("worker-0", name="rogue", username=f.BOOTSTRAP_USERNAME)
    keys = view([genuine, again, rogue])
    assert [csr.name for csr in keys.rogue] == ["rogue"]
    rogue_part = keys.problem("worker-0").split("while")[0]
    assert "rogue (requested by %s" % f.BOOTSTRAP_USERNAME in rogue_part and "genuine" not in rogue_part
    assert "oc delete csr rogue" in keys.problem("worker-0")


def test_a_csr_from_before_the_reboot_and_a_malformed_one_do_not_count_as_a_second_key():
    key = f.make_key()
    early = f.client_csr("worker-0", name="early", created=NOW - 10 * MINUTE)
    sans = f.client_csr("worker-0", name="sans", dns=["worker-0"])
    genuine = f.client_csr("worker-0", key=key, name="genuine", created=NOW - MINUTE)
    keys = view([early, sans, genuine], not_before=NOW - 2 * MINUTE)
    assert [csr.name for csr in keys.to_approve] == ["genuine"]
    assert keys.problem("worker-0") is None
    assert set(keys.refused) == {"early", "sans"}


def node(ready, created, changed, roles=("worker",)):
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
    joining = node("False", "2024-05-01T12:00:00Z", "2024-05-01T12:00:01Z")
    failed = node("Unknown", "2024-05-01T12:00:00Z", "2024-05-01T15:00:00Z")
    assert never_ready(joining) and not never_ready(failed)
    assert health(None, None, [node_summary(joining)], {})["joining"] == ["worker-0"]
    assert health(None, None, [node_summary(joining)], {})["problems"] == []
    assert health(None, None, [node_summary(failed)], {})["problems"] == ["Node worker-0 is not Ready"]
