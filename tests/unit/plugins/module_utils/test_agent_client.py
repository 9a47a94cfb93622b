# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The agent client and the poll driver against small HTTP agents on 127.0.1.x (``agent_fakes``).

The tests check the requests-per-host-per-poll budget through the requests each fake agent records.
"""

import socket
import time

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._install.client import (
    AgentClient,
    AgentRequestError,
    AuthChoice,
    kubelet_state,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._install.token import AgentToken
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.agent_fakes import (
    API,
    CLUSTER_ID,
    INFRA_ENV_ID,
    TO_REBOOT,
    TOKEN,
    WRITING,
    Lab,
    cluster,
    host,
    per_round,
)


@pytest.fixture
def lab(tmp_path):
    created = Lab(tmp_path)
    yield created
    created.close()


def test_three_hosts_to_rebooted_one_refusing_at_first(lab):
    agents = [lab.agent(0, TO_REBOOT), lab.agent(1, TO_REBOOT), lab.agent(2, TO_REBOOT, start=False)]
    lab.at_round(3, lambda: lab.start(2, agents[2]))
    watch = lab.watch(3)
    failure, result = watch.run("rebooted", wait_timeout=600, wait_sleep=5)
    assert failure is None
    assert sorted(result["hosts"]) == ["worker-0", "worker-1", "worker-2"]
    assert all(h["reached"] and h["phase"] == "rebooted" for h in result["hosts"].values())
    assert result["polls"] == 7  # worker-2 answers from round 3 and needs five rounds
    for name, entry in result["hosts"].items():
        writes = [e["percentage"] for e in entry["timeline"] if e["stage"] == WRITING]
        assert writes == [30, 60], name
        assert entry["last_event"] == "reached installation stage Rebooting"
        assert entry["unreachable_since"] is None
    late = result["hosts"]["worker-2"]["timeline"]
    assert late[0] == {
        "time": "2025-01-20T10:00:00Z",
        "status": None,
        "stage": None,
        "percentage": None,
        "event": "the agent does not answer",
    }
    assert late[1]["time"] == "2025-01-20T10:00:10Z" and late[1]["status"] == "discovering"
    for agent in agents:
        assert max(per_round(agent).values()) <= 2
        assert agent.requests[0][1] == API + "/clusters?with_hosts=true"
        assert agent.requests[1][1] == API + "/events?infra_env_id=" + INFRA_ENV_ID
        assert agent.requests[2][1] == API + "/clusters/" + CLUSTER_ID
    # Reached hosts are not polled again: the first two answer five rounds, two requests each.
    assert sorted(per_round(agents[0])) == [1, 2, 3, 4, 5]
    refused, kubelet_probes = 2, 2  # worker-2's first two rounds: the agent and the kubelet port refuse
    assert result["requests"] == sum(len(a.requests) for a in agents) + refused + kubelet_probes
    assert result["duration"] == 30.0


def test_rebooted_when_the_agent_is_gone_and_the_kubelet_answers_tls(lab):
    installing = [("installing-in-progress", WRITING, 90, "Writing image to disk: 90%")]
    lab.agent(0, installing)
    lab.at_round(2, lambda: lab.stop(("agent", 0)))
    lab.at_round(3, lambda: lab.start_kubelet(0))
    failure, result = lab.watch(1).run("rebooted", wait_timeout=600, wait_sleep=5)
    assert failure is None
    entry = result["hosts"]["worker-0"]
    assert result["polls"] == 3
    assert [e["event"] for e in entry["timeline"]] == [
        "Writing image to disk: 90%",
        "the agent does not answer",
        "the agent is gone and the kubelet answers TLS: the host rebooted from its disk",
    ]
    assert entry["unreachable_since"] == "2025-01-20T10:00:05Z"
    assert entry["status"] == "installing-in-progress"  # the agent's last word is kept
    # round 1: two requests; rounds 2 and 3: one refused request and one TLS handshake each
    assert result["requests"] == 2 + 2 + 2
    assert entry["kubelet"] == "handshake"


@pytest.mark.parametrize("serving_certificate, kubelet", [(True, "handshake"), (False, "internal_error")])
def test_a_fresh_run_recognises_a_host_that_already_rebooted(lab, serving_certificate, kubelet):
    """No agent (it went away with the reboot), no approved CSR needed: the kubelet port is enough."""
    lab.start_kubelet(0, serving_certificate=serving_certificate)
    failure, result = lab.watch(1).run("rebooted", wait_timeout=60)
    assert failure is None and result["polls"] == 1 and result["requests"] == 2
    entry = result["hosts"]["worker-0"]
    assert entry["reached"] and entry["answered"] is False and entry["kubelet"] == kubelet
    assert entry["timeline"][-1]["event"].startswith("the agent does not answer and the kubelet ")


def test_agent_unreachable_mid_install_then_back(lab):
    steps = TO_REBOOT[:3] + [TO_REBOOT[3]] * 2 + TO_REBOOT[4:]
    agent = lab.agent(0, steps)
    lab.at_round(3, lambda: lab.stop(("agent", 0)))
    lab.at_round(7, lambda: lab.start(0, agent))
    failure, result = lab.watch(1).run("rebooted", wait_timeout=600, wait_sleep=5)
    assert failure is None
    events = [e["event"] for e in result["hosts"]["worker-0"]["timeline"]]
    assert "the agent does not answer" in events
    assert result["hosts"]["worker-0"]["unreachable_since"] is None
    assert result["polls"] == 10


def test_timeout_names_the_host_that_never_answered(lab):
    agents = [lab.agent(0, TO_REBOOT[:1])]
    failure, result = lab.watch(2, request_timeout=1).run("discovered", wait_timeout=12, wait_sleep=5)
    assert failure.startswith("timed out after 12 s waiting for 1 of 2 host(s) to reach discovered: ")
    assert (
        "worker-1: never answered: not booted, booted a wrong ISO (another cluster, MAC not in the ISO, "
        "expired token) or unreachable at %s:%d" % (lab.address(1), lab.port) in failure
    )
    assert "worker-0" not in failure
    assert result["polls"] == 4 and result["duration"] == 12.0  # rounds at 0, 5, 10 and at the deadline
    assert per_round(agents[0]) == {1: 2}
    assert result["hosts"]["worker-1"]["answered"] is False


def test_wait_false_returns_one_snapshot(lab):
    lab.agent(0, TO_REBOOT)
    failure, result = lab.watch(1).run("rebooted", wait=False)
    assert failure is None
    assert result["polls"] == 1
    assert result["hosts"]["worker-0"]["status"] == "discovering"
    assert result["hosts"]["worker-0"]["reached"] is False


def test_wait_false_still_fails_fast(lab):
    lab.agent(0, [("error", "Installing", 50, "Host failed to install")])
    failure, result = lab.watch(1).run("rebooted", wait=False)
    assert "failed: status error at stage Installing (50%): error info; last agent event: Host failed" in failure
    assert result["hosts"]["worker-0"]["stage"] == "Installing"


def test_validation_failing_past_the_grace_fails_before_the_timeout(lab):
    lab.agent(0, [("insufficient", None, None, "Host validation ntp-synced failed")])
    lab.servers[("agent", 0)].agent.next_cluster = _insufficient_with_ntp
    failure, result = lab.watch(1).run("rebooted", wait_timeout=3600, wait_sleep=5, grace_seconds=20)
    assert "validation ntp-synced has been failing since 2025-01-20T10:00:00Z" in failure
    assert "Host couldn't synchronize with any NTP server" in failure
    assert result["polls"] == 5 and result["duration"] == 20.0


def _insufficient_with_ntp():
    return cluster(
        [
            host(
                "worker-0",
                status="insufficient",
                failing=[("ntp-synced", "Host couldn't synchronize with any NTP server")],
            )
        ]
    )


def test_a_list_without_hosts_costs_one_get_of_the_cluster(lab):
    agent = lab.agent(0, TO_REBOOT, list_with_hosts=False)
    watch = lab.watch(1)
    watch.run("rebooted", wait=False)
    watch.run("rebooted", wait=False)
    assert [path for _round, path in agent.requests] == [
        API + "/clusters?with_hosts=true",
        API + "/clusters/" + CLUSTER_ID,
        API + "/clusters/" + CLUSTER_ID,
        API + "/events?infra_env_id=" + INFRA_ENV_ID,
    ]


def test_a_restarted_agent_with_a_new_cluster_is_listed_again(lab):
    agent = lab.agent(0, TO_REBOOT)
    watch = lab.watch(1)
    watch.run("rebooted", wait=False)
    agent.cluster_id = "11111111-2222-4333-8444-555555555555"
    failure, result = watch.run("rebooted", wait=False)
    assert failure is None  # a 404 is tolerated
    watch.run("rebooted", wait=False)
    paths = [path for _round, path in agent.requests]
    assert paths[2] == API + "/clusters/" + CLUSTER_ID
    assert paths[3] == API + "/clusters?with_hosts=true"
    assert result["hosts"]["worker-0"]["status"] == "discovering"


def test_many_hosts_cost_one_round_not_one_per_host(lab):
    count, delay = 24, 0.25
    for index in range(count):
        lab.agent(index, TO_REBOOT).delay = delay
    started = time.monotonic()
    failure, result = lab.watch(count).run("rebooted", wait=False)
    elapsed = time.monotonic() - started
    assert failure is None and len(result["hosts"]) == count
    assert result["requests"] == 2 * count
    # Serially this takes count * 2 * delay = 12 s; in parallel about 2 * delay.
    assert elapsed < 4 * delay


def test_client_errors(lab):
    lab.agent(0, TO_REBOOT)
    client = AgentClient(lab.address(0), lab.port, AuthChoice(AgentToken(TOKEN)), 2)
    with pytest.raises(AgentRequestError) as missing:
        client.get("/no-such-path")
    assert missing.value.kind == "http_error" and missing.value.status == 404
    assert "HTTP 404 on GET /no-such-path: not found" in str(missing.value)
    with pytest.raises(AgentRequestError) as refused:
        AgentClient(lab.address(5), lab.port, AuthChoice(AgentToken(TOKEN)), 2).list_clusters()
    assert refused.value.kind == "unreachable" and refused.value.detail == "connection refused"
    assert client.requests == 1


def test_client_times_out_on_a_silent_peer(lab):
    with socket.socket() as silent:
        silent.bind((lab.address(9), 0))
        silent.listen(1)  # accepts the connection but never answers
        client = AgentClient(lab.address(9), silent.getsockname()[1], AuthChoice(AgentToken(TOKEN)), 1)
        with pytest.raises(AgentRequestError) as timed_out:
            client.list_clusters()
    assert timed_out.value.kind == "unreachable" and timed_out.value.detail == "no answer within 1 s"


def test_kubelet_state(lab):
    assert kubelet_state(lab.address(0), lab.kubelet_port, 1) is None  # connection refused
    lab.start_kubelet(0)
    assert kubelet_state(lab.address(0), lab.kubelet_port, 1) == "handshake"
    lab.start_kubelet(2, serving_certificate=False)
    assert kubelet_state(lab.address(2), lab.kubelet_port, 1) == "internal_error"
    lab.agent(1, TO_REBOOT)  # plain HTTP is not TLS
    assert kubelet_state(lab.address(1), lab.port, 1) is None
