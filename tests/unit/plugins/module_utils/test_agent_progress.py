# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Table tests of the pure agent progress logic, on agent JSON from ``agent_fakes``."""

import dataclasses
import datetime

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._install import progress as ap
from ansible_collections.openshift_agent.day2.plugins.module_utils._install.progress import (
    HostProgress,
    Observation,
)
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.agent_fakes import (
    T0,
    cluster,
    host,
)


def at(seconds):
    return T0 + datetime.timedelta(seconds=seconds)


def answered(host_entry, cluster_status="adding-hosts", message=None):
    return Observation(
        "answered",
        cluster=cluster([host_entry], status=cluster_status),
        host=host_entry,
        event={"message": message} if message else None,
    )


def progress(name="worker-0"):
    return HostProgress(name, "127.0.111.20", 8090, "52:54:00:00:00:20")


@pytest.mark.parametrize(
    "until, reached_from",
    [
        ("discovered", "discovering"),
        ("validated", "known"),
        ("installing", "preparing-for-installation"),
        ("rebooted", "added-to-existing-cluster"),
    ],
)
def test_until_order(until, reached_from):
    order = ["discovering", "known", "preparing-for-installation", "added-to-existing-cluster"]
    for status in order:
        p = progress()
        p.observe(answered(host(status=status)), T0)
        assert p.reached(until) == (order.index(status) >= order.index(reached_from)), status


def test_reached_is_kept_when_the_status_moves_back():
    p = progress()
    p.observe(answered(host(status="known")), at(0))
    p.observe(answered(host(status="insufficient", failing=[("ntp-synced", "not synced")])), at(5))
    assert p.reached("validated")
    assert p.status == "insufficient"


def test_agent_answering_without_the_host_is_not_discovered():
    p = progress()
    p.observe(Observation("answered", cluster=cluster([])), T0)
    assert p.answered and not p.reached("discovered")
    assert p.describe().startswith("worker-0: reached waiting")


def test_timeline_appends_only_on_change_and_keeps_write_percentages():
    p = progress()
    steps = [
        (host(status="discovering"), "Host discovered"),
        (host(status="discovering"), "Host discovered"),
        (host(status="known"), "Host is ready"),
        (host(status="installing-in-progress", stage="Writing image to disk", percentage=20), "40%"),
        (host(status="installing-in-progress", stage="Writing image to disk", percentage=20), "40%"),
        (host(status="installing-in-progress", stage="Writing image to disk", percentage=60), "60%"),
        (host(status="installing-in-progress", stage="Writing image to disk", percentage=60), "60%"),
        (host(status="installing-in-progress", stage="Rebooting", percentage=100), "Rebooting"),
    ]
    for second, (entry, message) in enumerate(steps):
        p.observe(answered(entry, message=message), at(second * 5))
    assert [(e["status"], e["stage"], e["percentage"]) for e in p.timeline] == [
        ("discovering", None, None),
        ("known", None, None),
        ("installing-in-progress", "Writing image to disk", 20),
        ("installing-in-progress", "Writing image to disk", 60),
        ("installing-in-progress", "Rebooting", 100),
    ]
    assert p.timeline[1]["time"] == "2025-01-20T10:00:10Z"
    assert p.timeline[1]["event"] == "Host is ready"
    assert p.reached("rebooted")


def test_a_new_event_alone_is_a_change():
    p = progress()
    p.observe(answered(host(status="known"), message="a"), at(0))
    p.observe(answered(host(status="known"), message="b"), at(5))
    assert [e["event"] for e in p.timeline] == ["a", "b"]


GRACE = 600


def test_failing_validation_fails_only_after_the_grace():
    p = progress()
    ntp = [("ntp-synced", "Host couldn't synchronize with any NTP server")]
    p.observe(answered(host(status="insufficient", failing=ntp)), at(0))
    p.observe(answered(host(status="insufficient", failing=ntp)), at(599))
    assert p.failure(GRACE, at(599)) is None
    p.observe(answered(host(status="insufficient", failing=ntp)), at(600))
    message = p.failure(GRACE, at(600))
    assert "validation ntp-synced" in message
    assert "Host couldn't synchronize with any NTP server" in message
    assert "since 2025-01-20T10:00:00Z" in message
    assert "worker-0" in message
    assert p.result("rebooted")["failing_validations"] == [
        {
            "id": "ntp-synced",
            "message": "Host couldn't synchronize with any NTP server",
            "since": "2025-01-20T10:00:00Z",
        }
    ]


def test_a_validation_that_passes_restarts_its_grace():
    p = progress()
    ntp = [("ntp-synced", "not synced")]
    p.observe(answered(host(status="insufficient", failing=ntp)), at(0))
    p.observe(answered(host(status="insufficient")), at(300))
    p.observe(answered(host(status="insufficient", failing=ntp)), at(500))
    assert p.failure(GRACE, at(900)) is None
    assert p.failure(GRACE, at(1100)) is not None


def test_the_oldest_expired_validation_is_named_first():
    p = progress()
    p.observe(answered(host(status="insufficient", failing=[("ntp-synced", "ntp")])), at(0))
    p.observe(
        answered(host(status="insufficient", failing=[("ntp-synced", "ntp"), ("has-min-memory", "mem")])), at(100)
    )
    message = p.failure(GRACE, at(800))
    assert "validation ntp-synced" in message and "1 more failing validation" in message


def test_validations_do_not_matter_once_installing_or_reached():
    failing = [("ntp-synced", "ntp")]
    installing = progress()
    installing.observe(answered(host(status="installing-in-progress", stage="Installing", failing=failing)), at(0))
    assert installing.failure(GRACE, at(5000)) is None
    known = progress()
    known.observe(answered(host(status="known", failing=failing)), at(0))
    assert known.failure(GRACE, at(5000), until="validated") is None
    assert known.failure(GRACE, at(5000), until="rebooted") is not None


@pytest.mark.parametrize(
    "entry, cluster_status, fragments",
    [
        (
            host(
                status="error",
                stage="Writing image to disk",
                percentage=40,
                status_info="Host failed to install because its installation stage Writing image to disk took longer",
            ),
            "adding-hosts",
            [
                "worker-0",
                "failed: status error at stage Writing image to disk (40%)",
                "installation stage Writing image to disk took longer",
                "last agent event: boom",
            ],
        ),
        (
            host(status="installing-in-progress", stage="Failed", status_info="coreos-installer exited 1"),
            "adding-hosts",
            ["at stage Failed", "coreos-installer exited 1"],
        ),
        (
            host(
                status="installing-pending-user-action",
                stage="Rebooting",
                status_info="Expected the host to boot from disk, but it booted the installation image",
            ),
            "adding-hosts",
            [
                "installing-pending-user-action",
                "booted the installation image",
                "eject the virtual media",
                "fix the boot order",
            ],
        ),
        (host(status="known"), "error", ["cluster is in status error", "cluster is adding hosts"]),
        (
            host(status="installing-in-progress", stage="Rebooting"),
            "installing-pending-user-action",
            ["cluster is in status installing-pending-user-action", "fix the boot order"],
        ),
    ],
)
def test_fail_fast_states(entry, cluster_status, fragments):
    p = progress()
    p.observe(answered(entry, cluster_status=cluster_status, message="boom"), T0)
    message = p.failure(GRACE, T0)
    for fragment in fragments:
        assert fragment in message


def test_fatal_state_wins_over_a_rebooted_stage():
    p = progress()
    p.observe(answered(host(status="installing-pending-user-action", stage="Rebooting")), T0)
    assert p.reached("rebooted")
    verdict, message = ap.round_verdict([p], [p], "rebooted", GRACE, T0)
    assert verdict == "failed" and "fix the boot order" in message


def test_a_refused_token_fails_with_the_detail_and_no_header_is_kept():
    p = progress()
    p.observe(Observation("rejected", "in Authorization: HTTP 401 on GET /clusters: expired. Rebuild the ISO"), T0)
    message = p.failure(GRACE, T0)
    assert (
        message == "host worker-0 (127.0.111.20): the agent at 127.0.111.20:8090 refused the token: "
        "in Authorization: HTTP 401 on GET /clusters: expired. Rebuild the ISO."
    )
    assert p.answered and p.auth_header is None
    assert p.timeline[-1]["event"] == "the agent refused the token"


def test_the_accepted_header_is_kept_per_host():
    p = progress()
    p.observe(dataclasses.replace(answered(host(status="known")), header="Authorization"), T0)
    p.observe(answered(host(status="known")), at(5))
    assert p.result("validated")["auth_header"] == "Authorization"


@pytest.mark.parametrize(
    "status, cluster_status, fragment",
    [
        ("cancelled", "adding-hosts", "failed: status cancelled"),
        ("known", "cancelled", "cluster is in status cancelled"),
    ],
)
def test_cancelled_fails_fast(status, cluster_status, fragment):
    p = progress()
    p.observe(answered(host(status=status), cluster_status=cluster_status), T0)
    assert fragment in p.failure(GRACE, T0)


def test_other_http_errors_are_tolerated():
    p = progress()
    p.observe(Observation("http_error", "HTTP 503 on GET /clusters: starting"), T0)
    assert p.failure(GRACE, T0) is None
    assert "agent error: HTTP 503" in p.describe()


@pytest.mark.parametrize(
    "before, kubelet, rebooted",
    [
        ("installing-in-progress", "handshake", True),
        ("installing-in-progress", "internal_error", True),
        ("installing-in-progress", None, False),
        ("known", "handshake", True),
        ("known", None, False),
        (None, "internal_error", True),
        (None, None, False),
    ],
)
def test_rebooted_when_the_agent_does_not_answer_and_the_kubelet_does(before, kubelet, rebooted):
    p = progress()
    if before:
        p.observe(
            answered(
                host(status=before, stage="Writing image to disk" if "install" in before else None, percentage=100)
            ),
            at(0),
        )
    p.observe(Observation("unreachable", "connection refused", kubelet=kubelet), at(5))
    assert p.reached("rebooted") == rebooted
    assert p.result("rebooted")["kubelet"] == kubelet
    # The agent last answered at 0 s from the live ISO: the installed system's CSRs cannot be older.
    assert p.result("rebooted")["rebooted_after"] == ("2025-01-20T10:00:00Z" if rebooted and before else None)
    event = p.timeline[-1]["event"]
    if not rebooted:
        assert event == "the agent does not answer"
    elif before == "installing-in-progress":
        assert event.startswith("the agent is gone and the kubelet ")
        assert event.endswith(": the host rebooted from its disk")
    else:  # a fresh run: the host rebooted before it started
        assert event.startswith("the agent does not answer and the kubelet ")
        assert event.endswith(": the host already rebooted from its disk")
    if kubelet == "internal_error":
        assert "aborts TLS with alert internal_error (its serving certificate is not approved yet)" in event


def test_unreachable_since_is_kept_until_the_agent_answers_again():
    p = progress()
    p.observe(answered(host(status="installing-in-progress", stage="Installing")), at(0))
    p.observe(Observation("unreachable", "connection refused"), at(5))
    p.observe(Observation("unreachable", "no answer within 5 s"), at(10))
    assert p.result("rebooted")["unreachable_since"] == "2025-01-20T10:00:05Z"
    assert p.failure(GRACE, at(10)) is None
    assert [e["event"] for e in p.timeline] == [None, "the agent does not answer"]
    p.observe(answered(host(status="installing-in-progress", stage="Installing")), at(25))
    assert p.result("rebooted")["unreachable_since"] is None
    assert len(p.timeline) == 3


def test_never_answered_is_said_explicitly():
    p = progress()
    p.observe(Observation("unreachable", "connection refused"), T0)
    text = p.describe()
    assert text.startswith("worker-0: never answered: not booted, booted a wrong ISO")
    assert text.endswith(
        "MAC not in the ISO, expired token) or unreachable at 127.0.111.20:8090 (last attempt: connection refused)"
    )


def test_round_verdict_and_timeout_message():
    done, late, broken = progress("done"), progress("late"), progress("broken")
    done.observe(answered(host("done", status="added-to-existing-cluster")), T0)
    late.observe(
        answered(
            host("late", status="installing-in-progress", stage="Writing image to disk", percentage=40),
            message="Writing image to disk: 40%",
        ),
        T0,
    )
    assert ap.round_verdict([done, late], [done, late], "rebooted", GRACE, T0) == ("waiting", None)
    assert ap.round_verdict([done, late], [done, late], "installing", GRACE, T0) == ("done", None)
    broken.observe(answered(host("broken", status="error")), T0)
    assert ap.round_verdict([done, broken], [done], "discovered", GRACE, T0) == ("done", None)
    assert ap.round_verdict([done, broken], [broken], "discovered", GRACE, T0)[0] == "failed"
    silent = progress("silent")
    message = ap.timeout_message([done, late, silent], "rebooted", 3600)
    assert message.startswith("timed out after 3600 s waiting for 2 of 3 host(s) to reach rebooted: ")
    assert "late: reached installing; status installing-in-progress at stage Writing image to disk (40%)" in message
    assert "last event: Writing image to disk: 40%" in message
    assert "silent: never answered" in message
    assert "done:" not in message


def test_result_shape():
    p = progress()
    p.observe(answered(host(status="known"), message="Host is ready"), T0)
    result = p.result("validated")
    assert result == {
        "address": "127.0.111.20",
        "answered": True,
        "phase": "validated",
        "reached": True,
        "status": "known",
        "status_info": "Host is known",
        "stage": None,
        "percentage": None,
        "cluster_status": "adding-hosts",
        "failing_validations": [],
        "last_event": "Host is ready",
        "auth_header": None,
        "auth_refused": None,
        "kubelet": None,
        "rebooted_after": None,
        "timeline": [
            {
                "time": "2025-01-20T10:00:00Z",
                "status": "known",
                "stage": None,
                "percentage": None,
                "event": "Host is ready",
            }
        ],
        "unreachable_since": None,
    }
