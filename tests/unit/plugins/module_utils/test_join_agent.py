# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The agent side of the engine: the agent token (plugins/module_utils/_join/token.py) and the agent
(plugins/module_utils/_join/agent.py): reading its JSON, the stage and status table, HostProgress, the REST
client and the kubelet probe against small HTTP agents on 127.0.1.x (``agent_fakes``), and the loop that polls
them (agent_wait's face).

The HTTP tests check the requests-per-host-per-poll budget through the requests each fake agent records. The
fake agents answer as assisted-service's agent-local auth does: 4.17 reads the token from ``Authorization``
only (``Watcher-Authorization`` is no scheme there: 401 "unauthenticated for invalid credentials"); 4.18+ reads
the watcher token from ``Watcher-Authorization`` and refuses another persona with 403.
"""

import dataclasses
import datetime
import hashlib
import json
import socket
import threading

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._join import agent
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import token as tok
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.agent import (
    AgentClient,
    AgentRequestError,
    AuthChoice,
    HostProgress,
    Observation,
)
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.agent_fakes import (
    API,
    CLUSTER_ID,
    EXP,
    INFRA_ENV_ID,
    T0,
    TO_REBOOT,
    TOKEN,
    UNAUTHENTICATED,
    USER,
    WATCHER,
    WRITING,
    Lab,
    cluster,
    event,
    host,
    host_id,
    jwt,
    per_round,
    requests,
    secret,
    validations,
)

GONE_CLUSTER = "11111111-2222-4333-8444-555555555555"


@pytest.fixture
def lab(tmp_path):
    created = Lab(tmp_path)
    yield created
    created.close()


# ================================================================ the token (token.py)

V417 = secret(agentAuthToken=jwt({"infra_env_id": "3f2b", "exp": EXP}))
V418 = secret(
    agentAuthToken=jwt({"auth_scheme": "agentAuth", "exp": EXP}),
    userAuthToken=jwt({"auth_scheme": "userAuth", "exp": EXP}),
    watcherAuthToken=jwt({"auth_scheme": "watcherAuth", "exp": EXP - 60}),
)


def test_4_17_secret_gives_the_agent_token_sent_in_authorization():
    token = tok.watch_token(V417)
    assert token.key == "agentAuthToken"
    assert token.persona is None
    assert token.header("4.17.12") == "Authorization"
    # a 4.17 token on a cluster upgraded to 4.18 (kept while valid) still goes in Authorization
    assert token.header("4.18.0") == "Authorization"


def test_4_18_secret_gives_the_watcher_token_sent_in_watcher_authorization():
    token = tok.watch_token(V418)
    assert token.key == "watcherAuthToken"
    assert token.persona == "watcherAuth"
    assert token.header("4.18.3") == tok.WATCHER_HEADER
    assert token.header(None) == tok.WATCHER_HEADER
    assert tok.other_header(token.header()) == "Authorization"
    assert tok.other_header("Authorization") == tok.WATCHER_HEADER


def test_user_and_agent_personas_go_in_authorization():
    assert tok.AgentToken(jwt({"auth_scheme": "userAuth"})).header("4.20.1") == "Authorization"
    assert tok.AgentToken(jwt({"auth_scheme": "agentAuth"})).header("4.20.1") == "Authorization"


@pytest.mark.parametrize(
    "version, header",
    [
        ("4.17.12", "Authorization"),
        ("v4.17.0-rc.1", "Authorization"),
        ("4.19.1", tok.WATCHER_HEADER),
        ("4.25.0", tok.WATCHER_HEADER),
        # not a version: the header of 4.18 and later
        ("4", tok.WATCHER_HEADER),
        ("", tok.WATCHER_HEADER),
        (None, tok.WATCHER_HEADER),
        ("x.y", tok.WATCHER_HEADER),
    ],
)
def test_a_token_without_claims_follows_the_release_else_starts_with_the_newest_header(version, header):
    token = tok.AgentToken("not-a-jwt")
    assert token.claims == {} and token.expiry is None
    assert token.header(version) == header


def test_a_4_17_claim_says_authorization_whatever_the_release():
    assert tok.AgentToken(jwt({"infra_env_id": "x"})).header(None) == "Authorization"
    assert tok.AgentToken(jwt({"infra_env_id": "x"})).header("4.20.0") == "Authorization"


@pytest.mark.parametrize(
    "value, claims",
    [
        ("a.%s.c" % jwt({"exp": 5}).split(".")[1], {"exp": 5}),
        ("a.W10.c", {}),  # a JSON list
        ("a.!!!.c", {}),
        ("nodots", {}),
        ("a.%s.c" % jwt({"exp": "soon"}).split(".")[1], {"exp": "soon"}),
    ],
)
def test_claims_are_read_without_verification_and_garbage_is_none(value, claims):
    token = tok.AgentToken(value)
    assert token.claims == claims
    assert token.expiry == (
        datetime.datetime(1970, 1, 1, 0, 0, 5, tzinfo=datetime.timezone.utc) if claims.get("exp") == 5 else None
    )


def test_only_watcher_key_still_found():
    only = secret(watcherAuthToken=jwt({"auth_scheme": "watcherAuth", "exp": EXP}))
    assert tok.watch_token(only).key == "watcherAuthToken"


def test_user_token_preferred_over_agent_token_without_watcher():
    both = secret(
        agentAuthToken=jwt({"auth_scheme": "agentAuth", "exp": EXP}),
        userAuthToken=jwt({"auth_scheme": "userAuth", "exp": EXP}),
    )
    assert tok.watch_token(both).key == "userAuthToken"


def test_the_secrets_values_are_trimmed_and_undecodable_ones_skipped():
    watcher = jwt({"auth_scheme": "watcherAuth"})
    mixed = secret(watcherAuthToken=watcher + "\n", userAuthToken="")
    mixed["data"]["agentAuthToken"] = "%%%"
    assert [(t.key, t.value) for t in tok.secret_tokens(mixed)] == [("watcherAuthToken", watcher)]
    assert tok.secret_tokens(None) == [] and tok.secret_tokens({"data": None}) == []


def test_expiry_is_the_earliest_exp():
    assert tok.secret_expiry(V418) == datetime.datetime.fromtimestamp(EXP - 60, tz=datetime.timezone.utc)
    assert tok.secret_expiry(V417) == datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)
    assert tok.secret_expiry({"data": {}}) is None


def test_missing_secret_and_empty_secret_say_what_to_do():
    with pytest.raises(tok.AgentTokenError, match=r"does not exist. node-joiner creates it .*build the ISO first"):
        tok.watch_token(None)
    broken = {"data": {"agentAuthToken": "%%%", "authTokenPublicKey": "eA=="}}
    with pytest.raises(tok.AgentTokenError, match="keys: agentAuthToken, authTokenPublicKey"):
        tok.watch_token(broken)
    with pytest.raises(tok.AgentTokenError, match=r"holds no readable \*AuthToken key \(keys: none\)"):
        tok.watch_token({"data": {}})


def test_describe_and_info_never_show_the_value():
    token = tok.watch_token(V418)
    text = token.describe()
    assert token.value not in text
    fingerprint = hashlib.sha256(token.value.encode()).hexdigest()[:16]  # what an ISO's sidecar records, in full
    assert text == (
        "key watcherAuthToken of Secret openshift-config/agent-auth-token (persona watcherAuth, sha256 "
        f"{fingerprint}, expires 2029-12-31T23:59:00Z)"
    )
    assert token.info() == {
        "source": "secret",
        "key": "watcherAuthToken",
        "persona": "watcherAuth",
        "expires": "2029-12-31T23:59:00Z",
    }
    assert "(4.17 agent token with infra_env_id, sha256 " in tok.watch_token(V417).describe()
    assert tok.AgentToken(jwt({"exp": EXP})).describe().startswith("the given token (no persona, sha256 ")
    given = tok.AgentToken("opaque")
    assert given.describe().startswith("the given token (no readable claims, sha256 ")
    assert given.info() == {"source": "option", "key": None, "persona": None, "expires": None}


# The agent's refusals (assisted-service agent-local auth, 4.17-4.21), and answers that are not refusals.
@pytest.mark.parametrize(
    "status, message, refused",
    [
        (401, "unauthenticated for invalid credentials", True),
        (401, "Failed to parse token: Token is expired\n", True),
        (401, "claims are incorrectly formatted", True),
        (403, "authClaim agentAuth is unauthorized to access", True),
        (500, "malformed auth_scheme claim", True),
        (400, "token missing authClaim or endpoint is missing authScheme", True),
        (500, "internal error: database is locked", False),
        (400, "bad request", False),
        (404, "not found", False),
        (200, "", False),
        (500, None, False),
    ],
)
def test_is_refusal(status, message, refused):
    assert tok.is_refusal(status, message) is refused


@pytest.mark.parametrize(
    "token, messages, cause",
    [
        (jwt({"auth_scheme": "watcherAuth"}), ["Failed to parse token: Token is expired\n"], "the token has expired"),
        (
            jwt({"auth_scheme": "agentAuth"}),
            ["authClaim agentAuth is unauthorized to access"] * 2,
            "a token of persona agentAuth cannot follow the install: the agent wants the watcher token",
        ),
        (
            jwt({"infra_env_id": "x"}),
            ["malformed auth_scheme claim"] * 2,
            "a 4.17 token (no auth_scheme claim) reached an agent of 4.18 or later",
        ),
        (
            jwt({"auth_scheme": "watcherAuth"}),
            ["unauthenticated for invalid credentials", "claims are incorrectly formatted"],
            "a 4.18+ token (no infra_env_id claim) reached an agent of 4.17",
        ),
        (
            jwt({"auth_scheme": "watcherAuth"}),
            ["Failed to parse token: crypto/ecdsa: verification error\n"],
            "the host runs an ISO signed with another key than the cluster's current token",
        ),
    ],
)
def test_refusal_advice_names_the_cause_and_the_fix(token, messages, cause):
    advice = tok.refusal_advice(tok.AgentToken(token), messages)
    assert advice.startswith("Likely cause: ") and cause in advice
    assert "Rebuild the ISO with day2_iso (force: true)" in advice
    assert "pass token: the watcher token of the ISO the host runs (key watcherAuthToken" in advice
    assert token not in advice


def test_refusal_advice_without_a_known_cause_still_gives_the_fix():
    advice = tok.refusal_advice(tok.AgentToken("x"), ["Unauthorized"])
    assert advice.startswith("Rebuild the ISO with day2_iso (force: true)")
    # a watcher token refused for its persona is not blamed on the persona
    watcher = tok.AgentToken(jwt({"auth_scheme": "watcherAuth"}))
    assert tok.refusal_advice(watcher, ["authClaim watcherAuth is unauthorized to access"]).startswith("Rebuild")


# ================================================================ reading the agent's JSON


@pytest.mark.parametrize(
    "clusters, name, mac, expected_host",
    [
        (
            [cluster([host("a", mac="52:54:00:00:00:01"), host("b", mac="52:54:00:00:00:02")])],
            "zzz",
            "52:54:00:00:00:02",
            "b",
        ),
        (
            [cluster([host("a", mac="52:54:00:00:00:01"), host("b", mac="52:54:00:00:00:02")])],
            "zzz",
            "52:54:00:00:00:0A",
            None,
        ),
        ([cluster([host("a"), host("b", mac="52:54:00:00:00:09")])], "b", None, "b"),
        ([cluster([host("a", hostname="localhost")])], "other", None, "a"),
        ([cluster([])], "a", None, None),
        ([], "a", None, None),
    ],
)
def test_find_host(clusters, name, mac, expected_host):
    found_cluster, found_host = agent.find_host(clusters, name, mac)
    if expected_host is None:
        assert found_host is None
    else:
        assert found_host["id"] == host_id(expected_host)
        assert found_cluster["id"] == CLUSTER_ID


def test_find_host_by_requested_hostname():
    entry = host("x", hostname="localhost")
    entry["requested_hostname"] = "worker-7"
    pair = agent.find_host([cluster([host("y"), entry])], "worker-7")
    assert pair[1] is entry


def test_find_host_returns_a_cluster_listed_without_hosts():
    bare = cluster([])
    del bare["hosts"]
    assert agent.find_host([bare], "a") == (bare, None)
    assert agent.find_host(None, "a") == (None, None) and agent.find_host(["junk", 3], "a") == (None, None)


@pytest.mark.parametrize("mac", ["52-54-00-00-00-02", "52:54:00:00:00:02", "52:54:00:00:00:02".upper()])
def test_find_host_by_mac_in_any_notation(mac):
    clusters = [cluster([host("a", mac="52:54:00:00:00:01"), host("b", mac="52:54:00:00:00:02")])]
    assert agent.find_host(clusters, "zzz", mac)[1]["id"] == host_id("b")


def test_find_host_skips_interfaces_that_are_not_objects():
    entry = host("b", mac="52:54:00:00:00:02")
    inventory = json.loads(entry["inventory"])
    inventory["interfaces"].insert(0, "eth0")
    entry["inventory"] = json.dumps(inventory)
    clusters = [cluster([host("a"), entry])]
    assert agent.find_host(clusters, "zzz", "52:54:00:00:00:02")[1] is entry


@pytest.mark.parametrize(
    "info, expected",
    [
        (
            validations([("ntp-synced", "Host couldn't synchronize with any NTP server")]),
            {"ntp-synced": "Host couldn't synchronize with any NTP server"},
        ),
        (validations(), {}),
        ('{"network": [{"id": "x", "status": "pending", "message": "m"}, {"id": "y", "status": "error"}]}', {}),
        ("", {}),
        (None, {}),
        ("not json", {}),
        ("[1, 2]", {}),
    ],
)
def test_failing_validations(info, expected):
    assert agent.failing_validations(info) == expected


def test_newest_event_by_time_skipping_other_hosts():
    events = [
        event("old", "2025-01-20T10:00:01Z", "worker-0"),
        event("other host, newest", "2025-01-20T10:00:09Z", "worker-1"),
        event("cluster level", "2025-01-20T10:00:03Z"),
        event("newest of ours", "2025-01-20T10:00:05Z", "worker-0"),
        event("older again", "2025-01-20T10:00:02Z", "worker-0"),
    ]
    assert agent.newest_event(events, host_id("worker-0"))["message"] == "newest of ours"
    assert agent.newest_event(events)["message"] == "other host, newest"
    assert agent.newest_event([]) is None and agent.newest_event("junk") is None


def test_newest_event_tie_takes_the_later_in_the_list():
    events = [event("first", "2025-01-20T10:00:01Z"), event("second", "2025-01-20T10:00:01Z")]
    assert agent.newest_event(events)["message"] == "second"


@pytest.mark.parametrize(
    "address, url",
    [
        ("192.0.2.7", "http://192.0.2.7:8090/api/assisted-install/v2"),
        ("fd00::21", "http://[fd00::21]:8090/api/assisted-install/v2"),
        ("[fd00::21]", "http://[fd00::21]:8090/api/assisted-install/v2"),
    ],
)
def test_agent_url(address, url):
    assert agent.agent_url(address, 8090) == url


# ================================================================ stages and statuses

# What a day-2 worker's agent reports (openshift/assisted-installer
# src/installer/installer.go@63b2da6ef83a82468cf0c5baea4fef27a36be267); the service stores Rebooting as Done.
DAY2_WORKER_STAGES = (
    "Starting installation",
    "Installing",
    "Writing image to disk",
    "Waiting for control plane",
    "Rebooting",
)
# known -> the four stages a day-2 worker reports before Rebooting -> Done (added-to-existing-cluster).
DAY2_WORKER_PHASES = ["validated", "installing", "installing", "installing", "installing", "rebooted"]


def phase_of(status, stage):
    level = agent.level_of(status, stage)
    return agent.TARGETS[level - 1] if level else "waiting"


@pytest.mark.parametrize(
    "status, stage, phase",
    [
        (None, None, "waiting"),
        ("discovering", None, "discovered"),
        ("insufficient", None, "discovered"),
        ("pending-for-input", None, "discovered"),
        ("known", None, "validated"),
        ("preparing-for-installation", None, "installing"),
        ("preparing-successful", None, "installing"),
        ("installing", "Starting installation", "installing"),
        ("installing-in-progress", "Writing image to disk", "installing"),
        ("installing-in-progress", "Rebooting", "rebooted"),
        ("installing-in-progress", "Configuring", "rebooted"),
        ("installing-in-progress", "Joined", "rebooted"),
        ("installing-in-progress", "Done", "rebooted"),
        ("added-to-existing-cluster", None, "rebooted"),
        ("added-to-existing-cluster", "Done", "rebooted"),
    ],
)
def test_level_of_status_and_stage(status, stage, phase):
    assert phase_of(status, stage) == phase


# Every host status of the swagger enum (the same 28 on 4.17-4.21) and the target it reaches on its own.
STATUS_PHASES = {
    "discovering": "discovered",
    "known": "validated",
    "disconnected": "discovered",
    "insufficient": "discovered",
    "disabled": "discovered",
    "preparing-for-installation": "installing",
    "preparing-failed": "validated",
    "preparing-successful": "installing",
    "pending-for-input": "discovered",
    "installing": "installing",
    "installing-in-progress": "installing",
    "installing-pending-user-action": "installing",
    "resetting-pending-user-action": "discovered",
    "installed": "rebooted",
    "error": "discovered",
    "resetting": "discovered",
    "added-to-existing-cluster": "rebooted",
    "cancelled": "discovered",
    "binding": "discovered",
    "unbinding": "discovered",
    "unbinding-pending-user-action": "discovered",
    "known-unbound": "discovered",
    "disconnected-unbound": "discovered",
    "insufficient-unbound": "discovered",
    "disabled-unbound": "discovered",
    "discovering-unbound": "discovered",
    "reclaiming": "discovered",
    "reclaiming-rebooting": "discovered",
}
# Every host stage (12 on 4.17-4.20, plus "Copying registry data to disk" on 4.21) with a status that reaches
# nothing by itself: the stage alone decides.
STAGE_PHASES = {
    "Starting installation": "installing",
    "Waiting for control plane": "installing",
    "Waiting for bootkube": "installing",
    "Waiting for controller": "installing",
    "Installing": "installing",
    "Writing image to disk": "installing",
    "Copying registry data to disk": "installing",
    "Rebooting": "rebooted",
    "Waiting for ignition": "rebooted",
    "Configuring": "rebooted",
    "Joined": "rebooted",
    "Done": "rebooted",
    "Failed": "discovered",
}


def test_the_tables_hold_every_stage_and_only_known_statuses():
    assert sorted(agent.STAGE_LEVEL) == sorted(STAGE_PHASES) and len(agent.STAGE_LEVEL) == 13
    # A status the table does not list counts as discovered: the table holds those that say more.
    assert set(agent.STATUS_LEVEL) < set(STATUS_PHASES) and len(STATUS_PHASES) == 28
    assert set(DAY2_WORKER_STAGES) < set(agent.STAGE_LEVEL)
    assert set(agent.DISK_WRITTEN_STAGES) == {s for s, phase in STAGE_PHASES.items() if phase == "rebooted"}
    assert agent.TARGETS == ("discovered", "validated", "installing", "rebooted")
    assert [agent.DISCOVERED, agent.VALIDATED, agent.INSTALLING, agent.REBOOTED] == [1, 2, 3, 4]


@pytest.mark.parametrize("status", sorted(STATUS_PHASES))
def test_every_status(status):
    assert phase_of(status, None) == STATUS_PHASES[status]


@pytest.mark.parametrize("stage", sorted(STAGE_PHASES))
def test_every_stage(stage):
    assert phase_of("discovering", stage) == STAGE_PHASES[stage]


@pytest.mark.parametrize(
    "status, stage", [("hibernating", None), (None, "Defragmenting"), ("", ""), ("hibernating", "Defragmenting")]
)
def test_unknown_values_do_not_crash(status, stage):
    assert agent.level_of(status, stage) == (agent.DISCOVERED if status else 0)
    assert status not in agent.STATUS_LEVEL and stage not in agent.STAGE_LEVEL


# ================================================================ HostProgress


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
    return HostProgress(name, "127.0.111.20", 8090)


GRACE = 600


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
    assert p.reached("validated") and p.phase() == "validated"
    assert p.status == "insufficient"


def test_agent_answering_without_the_host_is_not_discovered():
    p = progress()
    p.observe(Observation("answered", cluster=cluster([])), T0)
    assert p.answered and not p.reached("discovered")
    assert p.describe().startswith("worker-0: reached waiting")


def test_unknown_stage_and_status_are_kept_as_they_came():
    p = progress()
    p.observe(answered(host(status="hibernating", stage="Defragmenting", percentage=7), message="new"), T0)
    assert p.phase() == "discovered" and p.failure(GRACE, T0) is None
    assert (p.status, p.stage) == ("hibernating", "Defragmenting")
    assert "status hibernating at stage Defragmenting (7%)" in p.describe()
    p.observe(answered(host(status="hibernating", stage="Rebooting")), at(5))
    assert p.reached("rebooted") and p.disk_written


def test_a_day2_worker_goes_through_its_stages_to_done():
    """The agent's sequence for a day-2 worker; its Rebooting is stored as Done (added-to-existing-cluster)."""
    p = progress()
    seen, written = [], []
    sequence = (
        [("known", None, None)]
        + [("installing-in-progress", stage, (index + 1) * 20) for index, stage in enumerate(DAY2_WORKER_STAGES[:4])]
        + [("added-to-existing-cluster", "Done", 100)]
    )
    for second, (status, stage, percentage) in enumerate(sequence):
        p.observe(answered(host(status=status, stage=stage, percentage=percentage)), at(second * 5))
        seen.append(p.phase())
        written.append(p.disk_written)
    assert seen == DAY2_WORKER_PHASES
    assert written == [False] * 5 + [True]  # the virtual CD may go only once the disk is written
    assert p.result()["last_answer"] == "2025-01-20T10:00:25Z"  # when Done was seen
    assert [e["stage"] for e in p.timeline] == [None, *list(DAY2_WORKER_STAGES[:4]), "Done"]
    assert p.failure(GRACE, at(30)) is None


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


def test_failing_validation_fails_only_after_the_grace():
    p = progress()
    ntp = [("ntp-synced", "Host couldn't synchronize with any NTP server")]
    p.observe(answered(host(status="insufficient", failing=ntp)), at(0))
    p.observe(answered(host(status="insufficient", failing=ntp)), at(599))
    assert p.failure(GRACE, at(599)) is None
    p.observe(answered(host(status="insufficient", failing=ntp)), at(600))
    message = p.failure(GRACE, at(600))
    assert message == (
        "host worker-0 (127.0.111.20): validation ntp-synced has been failing since 2025-01-20T10:00:00Z (longer "
        "than validation_grace 600 s): Host couldn't synchronize with any NTP server (host status insufficient: "
        "Host is insufficient)"
    )
    assert p.result()["failing_validations"] == [
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
    assert "validation ntp-synced" in message and "; 1 more failing validation(s) in the result" in message


def test_validations_do_not_matter_once_installing_or_reached():
    failing = [("ntp-synced", "ntp")]
    installing = progress()
    installing.observe(answered(host(status="installing-in-progress", stage="Installing", failing=failing)), at(0))
    assert installing.failure(GRACE, at(5000)) is None
    known = progress()
    known.observe(answered(host(status="known", failing=failing)), at(0))
    assert known.failure(GRACE, at(5000), target="validated") is None
    assert known.failure(GRACE, at(5000), target="rebooted") is not None


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
                "host worker-0 (127.0.111.20)",
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
    assert "fix the boot order" in p.failure(GRACE, T0, target="rebooted")


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
    assert p.result()["auth_header"] == "Authorization"


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
    assert p.timeline[-1]["event"] == "the agent answered: HTTP 503 on GET /clusters: starting"


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
    assert p.reached("rebooted") == rebooted and p.disk_written == rebooted
    assert p.result()["kubelet"] == kubelet
    # The live ISO's agent last answered at 0 s: the installed system's CSRs cannot be older.
    assert p.result()["last_answer"] == ("2025-01-20T10:00:00Z" if before else None)
    note = p.timeline[-1]["event"]
    if not rebooted:
        assert note == "the agent does not answer"
    elif before == "installing-in-progress":
        assert note.startswith("the kubelet ") and note.endswith(": the host rebooted from its disk")
    else:  # a fresh run: the host rebooted before it started
        assert note.startswith("the kubelet ") and note.endswith(": the host already rebooted from its disk")
    if kubelet == "internal_error":
        assert "aborts TLS with alert internal_error (its serving certificate is not approved yet)" in note
    elif kubelet:
        assert "the kubelet answers TLS" in note


def test_unreachable_since_is_kept_until_the_agent_answers_again():
    p = progress()
    p.observe(answered(host(status="installing-in-progress", stage="Installing")), at(0))
    p.observe(Observation("unreachable", "connection refused"), at(5))
    p.observe(Observation("unreachable", "no answer within 5 s"), at(10))
    assert p.result()["unreachable_since"] == "2025-01-20T10:00:05Z"
    assert p.failure(GRACE, at(10)) is None
    assert "agent not answering since 2025-01-20T10:00:05Z (no answer within 5 s)" in p.describe()
    assert [e["event"] for e in p.timeline] == [None, "the agent does not answer"]
    p.observe(answered(host(status="installing-in-progress", stage="Installing")), at(25))
    assert p.result()["unreachable_since"] is None
    assert len(p.timeline) == 3


def test_never_answered_is_said_explicitly():
    p = progress()
    p.observe(Observation("unreachable", "connection refused"), T0)
    text = p.describe()
    assert text.startswith("worker-0: never answered: not booted, booted a wrong ISO")
    assert text.endswith(
        "MAC not in the ISO, expired token) or unreachable at 127.0.111.20:8090 (last attempt: connection refused)"
    )


def test_where_a_late_host_stands():
    late = progress("late")
    late.observe(
        answered(
            host("late", status="installing-in-progress", stage="Writing image to disk", percentage=40),
            message="Writing image to disk: 40%",
        ),
        T0,
    )
    assert late.describe() == (
        "late: reached installing; status installing-in-progress at stage Writing image to disk (40%); "
        "Host is installing-in-progress; last event: Writing image to disk: 40%"
    )
    assert progress("silent").describe().startswith("silent: never answered")


def test_result_shape():
    p = progress()
    p.observe(answered(host(status="known"), message="Host is ready"), T0)
    assert p.result() == {
        "address": "127.0.111.20",
        "answered": True,
        "phase": "validated",
        "status": "known",
        "status_info": "Host is known",
        "stage": None,
        "percentage": None,
        "cluster_status": "adding-hosts",
        "failing_validations": [],
        "last_event": "Host is ready",
        "last_answer": "2025-01-20T10:00:00Z",
        "auth_header": None,
        "auth_refused": None,
        "kubelet": None,
        "unreachable_since": None,
        "timeline": [
            {
                "time": "2025-01-20T10:00:00Z",
                "status": "known",
                "stage": None,
                "percentage": None,
                "event": "Host is ready",
            }
        ],
    }


# ================================================================ the client and the loop against fake agents


def client_for(lab, index, first_header=None, timeout=2):
    return AgentClient(
        "worker-%d" % index,
        lab.address(index),
        None,
        (lab.port, lab.kubelet_port),
        AuthChoice(tok.AgentToken(TOKEN), first_header),
        timeout,
    )


def test_three_hosts_to_rebooted_one_refusing_at_first(lab):
    agents = [lab.agent(0, TO_REBOOT), lab.agent(1, TO_REBOOT), lab.agent(2, TO_REBOOT, start=False)]
    lab.at_round(3, lambda: lab.start(2, agents[2]))
    failure, result, loop = lab.run(3)
    assert failure is None
    assert result["reached"] == ["worker-0", "worker-1", "worker-2"] and result["failed_hosts"] == []
    assert all(h["reached"] == "rebooted" for h in result["hosts"].values())
    assert result["rounds"] == 7  # worker-2 answers from round 3 and needs five rounds
    for name, entry in result["hosts"].items():
        writes = [e["percentage"] for e in entry["agent"]["timeline"] if e["stage"] == WRITING]
        assert writes == [30, 60], name
        assert entry["agent"]["last_event"] == "reached installation stage Rebooting"
        assert entry["agent"]["unreachable_since"] is None
    late = result["hosts"]["worker-2"]["agent"]["timeline"]
    assert late[0] == {
        "time": "2025-01-20T10:00:00Z",
        "status": None,
        "stage": None,
        "percentage": None,
        "event": "the agent does not answer",
    }
    assert late[1]["time"] == "2025-01-20T10:00:10Z" and late[1]["status"] == "discovering"
    for one in agents:
        assert max(per_round(one).values()) <= 2
        assert one.requests[0][1] == API + "/clusters?with_hosts=true"
        assert one.requests[1][1] == API + "/events?infra_env_id=" + INFRA_ENV_ID
        assert one.requests[2][1] == API + "/clusters/" + CLUSTER_ID
    # Reached hosts are not polled again: the first two answer five rounds, two requests each.
    assert sorted(per_round(agents[0])) == [1, 2, 3, 4, 5]
    refused = 2  # worker-2's first two rounds: its agent refuses the connection
    assert requests(loop) == sum(len(one.requests) for one in agents) + refused
    assert result["duration"] == 30.0


def test_rebooted_when_the_agent_is_gone_and_the_kubelet_answers_tls(lab):
    installing = [("installing-in-progress", WRITING, 90, "Writing image to disk: 90%")]
    lab.agent(0, installing)
    lab.at_round(2, lambda: lab.stop(("agent", 0)))
    lab.at_round(3, lambda: lab.start_kubelet(0))
    failure, result, loop = lab.run(1)
    assert failure is None
    entry = result["hosts"]["worker-0"]
    assert result["rounds"] == 3
    assert [e["event"] for e in entry["agent"]["timeline"]] == [
        "Writing image to disk: 90%",
        "the agent does not answer",
        "the kubelet answers TLS: the host rebooted from its disk",
    ]
    assert entry["agent"]["unreachable_since"] == "2025-01-20T10:00:05Z"
    assert entry["agent"]["status"] == "installing-in-progress"  # the agent's last word is kept
    assert (entry["state"], entry["rebooted_by"]) == ("rebooted", "its kubelet answers (handshake)")
    # round 1: two requests; rounds 2 and 3: one refused request each, then a TLS handshake
    assert requests(loop) == 2 + 1 + 1
    assert entry["agent"]["kubelet"] == "handshake"


@pytest.mark.parametrize("serving_certificate, kubelet", [(True, "handshake"), (False, "internal_error")])
def test_a_fresh_run_recognises_a_host_that_already_rebooted(lab, serving_certificate, kubelet):
    """No agent (it went away with the reboot), no approved CSR needed: the kubelet port is enough."""
    lab.start_kubelet(0, serving_certificate=serving_certificate)
    failure, result, loop = lab.run(1)
    assert failure is None and result["rounds"] == 1 and requests(loop) == 1
    entry = result["hosts"]["worker-0"]
    assert result["reached"] == ["worker-0"] and entry["agent"]["answered"] is False
    assert entry["agent"]["kubelet"] == kubelet
    assert entry["agent"]["timeline"][-1]["event"].endswith(": the host already rebooted from its disk")


def test_agent_unreachable_mid_install_then_back(lab):
    steps = TO_REBOOT[:3] + [TO_REBOOT[3]] * 2 + TO_REBOOT[4:]
    one = lab.agent(0, steps)
    lab.at_round(3, lambda: lab.stop(("agent", 0)))
    lab.at_round(7, lambda: lab.start(0, one))
    failure, result, _loop = lab.run(1)
    assert failure is None
    events = [e["event"] for e in result["hosts"]["worker-0"]["agent"]["timeline"]]
    assert "the agent does not answer" in events
    assert result["hosts"]["worker-0"]["agent"]["unreachable_since"] is None
    assert result["rounds"] == 10


def test_a_host_that_never_answers_fails_at_the_boot_timeout_naming_it(lab):
    agents = [lab.agent(0, TO_REBOOT[:1])]
    failure, result, _loop = lab.run(2, "discovered", request_timeout=1, boot_timeout=12)
    assert failure.startswith("1 of 2 host(s) failed (day2_max_failed_hosts is 0), 1 reached discovered: worker-1: ")
    assert (
        "nothing answered within day2_boot_timeout (12 s): never answered: not booted, booted a wrong ISO (another "
        "cluster, MAC not in the ISO, expired token) or unreachable at %s:%d; its kubelet port %d did not answer "
        "either" % (lab.address(1), lab.port, lab.kubelet_port) in failure
    )
    assert "worker-0:" not in failure
    assert result["rounds"] == 4 and result["duration"] == 15.0  # rounds at 0, 5, 10 and 15 s
    assert per_round(agents[0]) == {1: 2}
    assert result["hosts"]["worker-1"]["agent"]["answered"] is False and result["failed_hosts"] == ["worker-1"]


def test_wait_false_returns_one_snapshot(lab):
    lab.agent(0, TO_REBOOT)
    failure, result, _loop = lab.run(1, wait=False)
    assert failure is None
    assert result["rounds"] == 1
    assert result["hosts"]["worker-0"]["agent"]["status"] == "discovering"
    assert result["reached"] == [] and result["failed_hosts"] == []


def test_wait_false_still_fails_fast(lab):
    lab.agent(0, [("error", "Installing", 50, "Host failed to install")])
    failure, result, _loop = lab.run(1, wait=False)
    assert "failed: status error at stage Installing (50%): error info; last agent event: Host failed" in failure
    assert result["hosts"]["worker-0"]["agent"]["stage"] == "Installing"


def test_validation_failing_past_the_grace_fails_before_the_timeout(lab):
    lab.agent(0, [("insufficient", None, None, "Host validation ntp-synced failed")])
    lab.servers[("agent", 0)].agent.next_cluster = _insufficient_with_ntp
    failure, result, _loop = lab.run(1, validation_grace=20)
    assert "validation ntp-synced has been failing since 2025-01-20T10:00:00Z" in failure
    assert "Host couldn't synchronize with any NTP server" in failure
    assert result["rounds"] == 5 and result["duration"] == 20.0


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


def test_many_hosts_are_polled_together_not_one_after_the_other(lab):
    count = 24
    together = threading.Barrier(count, timeout=60)  # released only when every agent is asked at once
    for index in range(count):
        lab.agent(index, TO_REBOOT).barrier = together
    failure, result, loop = lab.run(count, wait=False, request_timeout=120)
    assert failure is None and len(result["hosts"]) == count and not together.broken
    assert {entry["agent"]["status"] for entry in result["hosts"].values()} == {"discovering"}
    assert requests(loop) == 2 * count


def test_a_list_without_hosts_costs_one_get_of_the_cluster(lab):
    one = lab.agent(0, TO_REBOOT, list_with_hosts=False)
    client = client_for(lab, 0)
    first, second = client.poll(), client.poll()
    assert first.kind == second.kind == "answered" and first.host["id"] == host_id("worker-0")
    assert [path for _round, path in one.requests] == [
        API + "/clusters?with_hosts=true",
        API + "/clusters/" + CLUSTER_ID,
        API + "/clusters/" + CLUSTER_ID,
        API + "/events?infra_env_id=" + INFRA_ENV_ID,
    ]


def test_a_restarted_agent_with_a_new_cluster_is_listed_again(lab):
    one = lab.agent(0, TO_REBOOT)
    client = client_for(lab, 0)
    client.poll()
    one.cluster_id = GONE_CLUSTER
    seen = client.poll()
    assert seen.kind == "http_error" and "HTTP 404 on GET /clusters/" + CLUSTER_ID in seen.detail
    assert client.cluster_id is None and seen.kubelet is None  # an answer: no kubelet probe
    third = client.poll()
    paths = [path for _round, path in one.requests]
    assert paths[2] == API + "/clusters/" + CLUSTER_ID
    assert paths[3] == API + "/clusters?with_hosts=true"
    assert third.kind == "answered" and third.host["status"] == "known" and client.cluster_id == GONE_CLUSTER


def test_an_error_after_authentication_keeps_the_header(lab):
    one = lab.agent(0, TO_REBOOT)
    one.header, one.wrong_header = USER, UNAUTHENTICATED
    client = client_for(lab, 0)
    client.cluster_id = GONE_CLUSTER  # gone: 404 after the authentication
    assert client.poll().kind == "http_error" and client.header == USER and client.auth.accepted == USER
    assert client.poll().kind == "answered"
    # poll 1: Watcher refused, Authorization answered 404; poll 2 lists the clusters in Authorization at once
    assert one.headers == [WATCHER, USER, USER, USER]
    assert [path.split("?")[0] for _round, path in one.requests] == [API + "/clusters/" + GONE_CLUSTER] * 2 + [
        API + "/clusters",
        API + "/events",
    ]


def test_client_errors(lab):
    lab.agent(0, TO_REBOOT)
    client = client_for(lab, 0)
    with pytest.raises(AgentRequestError) as missing:
        client.get("/no-such-path")
    assert missing.value.kind == "http_error" and missing.value.status == 404
    assert "HTTP 404 on GET /no-such-path: not found" in str(missing.value)
    assert client.requests == 1
    with pytest.raises(AgentRequestError) as refused:
        client_for(lab, 5).get("/clusters")
    assert refused.value.kind == "unreachable" and refused.value.detail == "connection refused"


def test_an_unreachable_agent_is_followed_by_one_kubelet_probe(lab):
    lab.start_kubelet(5, serving_certificate=False)
    seen = client_for(lab, 5).poll()
    assert (seen.kind, seen.detail, seen.kubelet) == ("unreachable", "connection refused", "internal_error")


def test_without_a_token_only_the_kubelet_is_asked(lab):
    lab.start_kubelet(0)
    client = AgentClient("worker-0", lab.address(0), None, (lab.port, lab.kubelet_port), None, 2)
    seen = client.poll()
    assert (seen.kind, seen.detail, seen.kubelet) == ("unreachable", "not asked (no agent token)", "handshake")
    assert client.requests == 0


def test_client_times_out_on_a_silent_peer(lab):
    with socket.socket() as silent:
        silent.bind((lab.address(9), 0))
        silent.listen(1)  # accepts the connection but never answers
        client = AgentClient(
            "worker-9", lab.address(9), None, (silent.getsockname()[1], 1), AuthChoice(tok.AgentToken(TOKEN)), 0.05
        )
        with pytest.raises(AgentRequestError) as timed_out:
            client.get("/clusters")
    assert timed_out.value.kind == "unreachable" and timed_out.value.detail == "no answer within 0.05 s"


def test_kubelet_state(lab):
    assert agent.kubelet_state(lab.address(0), lab.kubelet_port, 5) is None  # connection refused
    lab.start_kubelet(0)
    assert agent.kubelet_state(lab.address(0), lab.kubelet_port, 5) == "handshake"
    lab.start_kubelet(2, serving_certificate=False)
    assert agent.kubelet_state(lab.address(2), lab.kubelet_port, 5) == "internal_error"
    lab.agent(1, TO_REBOOT)  # plain HTTP is not TLS
    assert agent.kubelet_state(lab.address(1), lab.port, 5) is None


# ---------------------------------------------------------------- the token's header against each release


def test_a_token_refused_in_both_headers_fails_at_the_first_poll(lab):
    one = lab.agent(0, TO_REBOOT)
    one.token = "another-token"
    failure, result, loop = lab.run(1)
    assert (
        "host worker-0 (127.0.1.1): the agent at 127.0.1.1:%d refused the token: "
        "in Watcher-Authorization: HTTP 401 on GET /clusters: Failed to parse token: "
        "crypto/ecdsa: verification error; in Authorization: HTTP 401 on GET /clusters: "
        "Failed to parse token: crypto/ecdsa: verification error. Token: the given token (no "
        "readable claims, sha256 " % lab.port
    ) in failure
    assert (
        "Likely cause: the host runs an ISO signed with another key than the cluster's current token: an ISO built "
        "before Secret openshift-config/agent-auth-token was deleted or replaced"
    ) in failure
    assert "Rebuild the ISO with day2_iso (force: true)" in failure
    assert one.headers == [WATCHER, USER]
    assert result["rounds"] == 1 and requests(loop) == 2
    assert result["hosts"]["worker-0"]["agent"]["auth_header"] is None
    assert result["hosts"]["worker-0"]["state"] == "failed" and result["hosts"]["worker-0"]["failed_in"] == "installing"


def test_a_4_17_agent_takes_the_token_in_authorization_after_one_more_request(lab):
    agents = [lab.agent(0, TO_REBOOT), lab.agent(1, TO_REBOOT, start=False)]
    for one in agents:
        one.header, one.wrong_header = USER, UNAUTHENTICATED
    lab.at_round(2, lambda: lab.start(1, agents[1]))
    failure, result, _loop = lab.run(2)
    assert failure is None
    assert all(entry["agent"]["auth_header"] == USER for entry in result["hosts"].values())
    # worker-0 tried Watcher-Authorization once; worker-1 came later and started with what worked.
    assert agents[0].headers[:3] == [WATCHER, USER, USER] and set(agents[0].headers[3:]) == {USER}
    assert set(agents[1].headers) == {USER}
    assert per_round(agents[0])[1] == 3 and max(per_round(agents[0]).values()) <= 3
    assert max(per_round(agents[1]).values()) <= 2
    # The refusal the fallback recovered from is reported for the host that met it, once, in its timeline too.
    refused = result["hosts"]["worker-0"]["agent"]["auth_refused"]
    assert refused == {"header": WATCHER, "status": 401, "message": "unauthenticated for invalid credentials"}
    notes = [
        e["event"]
        for e in result["hosts"]["worker-0"]["agent"]["timeline"]
        if "refused the token in" in (e["event"] or "")
    ]
    assert notes == [
        "the agent refused the token in %s (HTTP 401: unauthenticated for invalid credentials); "
        "it accepted it in %s" % (WATCHER, USER)
    ]
    assert result["hosts"]["worker-1"]["agent"]["auth_refused"] is None
    assert "agent token in Authorization" in result["hosts"]["worker-0"]["summary"]


def test_the_header_asked_for_goes_first_and_the_other_is_tried_once(lab):
    watcher = jwt({"auth_scheme": "watcherAuth", "exp": EXP})
    one = lab.agent(0, TO_REBOOT)
    one.token = watcher
    failure, result, _loop = lab.run(1, "discovered", token=watcher, first_header=USER)
    # first_header (as follow() takes it from the option, else from the claims and the release) wins;
    # 403 for the persona in Authorization, then the other header
    assert failure is None and result["hosts"]["worker-0"]["agent"]["auth_header"] == WATCHER
    assert one.headers == [USER, WATCHER, WATCHER]


@pytest.mark.parametrize(
    "claims, refusal, cause",
    [
        (
            {"auth_scheme": "agentAuth"},
            (403, "authClaim agentAuth is unauthorized to access"),
            "a token of persona agentAuth cannot follow the install: the agent wants the watcher token",
        ),
        (
            {"infra_env_id": "x"},
            (500, "malformed auth_scheme claim"),
            "a 4.17 token (no auth_scheme claim) reached an agent of 4.18 or later",
        ),
    ],
)
def test_a_token_of_the_wrong_persona_or_release_fails_fast_naming_it(lab, claims, refusal, cause):
    token = jwt(claims)
    one = lab.agent(0, TO_REBOOT)
    one.token = token
    one.refuse_claims = refusal  # signed right, refused in both headers for its claims
    failure, _result, loop = lab.run(1, token=token)
    assert (
        "in Authorization: HTTP %d on GET /clusters: %s; in Watcher-Authorization: HTTP %d"
        % (refusal[0], refusal[1], refusal[0])
        in failure
    )
    assert cause in failure and "pass token: the watcher token" in failure
    assert token not in failure and requests(loop) == 2
