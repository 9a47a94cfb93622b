# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The token's header against fake agents of each release: the other header tried once, kept, and reported.

The fake agents of agent_fakes answer as assisted-service's agent-local auth does: 4.17 reads the token
from ``Authorization`` only (``Watcher-Authorization`` is no scheme there: 401 "unauthenticated for invalid
credentials"); 4.18+ reads the watcher token from ``Watcher-Authorization`` and refuses another persona with 403.
"""

import pytest

from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.agent_fakes import (
    API,
    TO_REBOOT,
    UNAUTHENTICATED,
    USER,
    WATCHER,
    Lab,
    per_round,
)
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.test_agent_token import jwt


@pytest.fixture
def lab(tmp_path):
    created = Lab(tmp_path)
    yield created
    created.close()


def test_a_token_refused_in_both_headers_fails_at_the_first_poll(lab):
    agent = lab.agent(0, TO_REBOOT)
    agent.token = "another-token"
    failure, result = lab.watch(1).run("rebooted", wait_timeout=600, wait_sleep=5)
    assert failure.startswith(
        "host worker-0 (127.0.1.1): the agent at 127.0.1.1:%d refused the token: "
        "in Watcher-Authorization: HTTP 401 on GET /clusters: Failed to parse token: "
        "crypto/ecdsa: verification error; in Authorization: HTTP 401 on GET /clusters: "
        "Failed to parse token: crypto/ecdsa: verification error. Token: the given token (no "
        "readable claims). Likely cause: the token was not signed" % lab.port
    )
    assert "Rebuild the ISO with day2_iso (force: true)" in failure
    assert agent.headers == [WATCHER, USER]
    assert result["polls"] == 1 and result["requests"] == 2
    assert result["auth_header"] is None and result["hosts"]["worker-0"]["auth_header"] is None


def test_a_4_17_agent_takes_the_token_in_authorization_after_one_more_request(lab):
    agents = [lab.agent(0, TO_REBOOT), lab.agent(1, TO_REBOOT, start=False)]
    for agent in agents:
        agent.header, agent.wrong_header = USER, UNAUTHENTICATED
    lab.at_round(2, lambda: lab.start(1, agents[1]))
    failure, result = lab.watch(2).run("rebooted", wait_timeout=600, wait_sleep=5)
    assert failure is None
    assert result["auth_header"] == USER
    assert all(entry["auth_header"] == USER for entry in result["hosts"].values())
    # worker-0 tried Watcher-Authorization once; worker-1 came later and started with what worked.
    assert agents[0].headers[:3] == [WATCHER, USER, USER] and set(agents[0].headers[3:]) == {USER}
    assert set(agents[1].headers) == {USER}
    assert per_round(agents[0])[1] == 3 and max(per_round(agents[0]).values()) <= 3
    assert max(per_round(agents[1]).values()) <= 2
    # The refusal the fallback recovered from is reported for the host that met it, once, in its timeline too.
    refused = result["hosts"]["worker-0"]["auth_refused"]
    assert refused == {"header": WATCHER, "status": 401, "message": "unauthenticated for invalid credentials"}
    notes = [
        e["event"] for e in result["hosts"]["worker-0"]["timeline"] if "refused the token in" in (e["event"] or "")
    ]
    assert notes == [
        "the agent refused the token in %s (HTTP 401: unauthenticated for invalid credentials); "
        "it accepted it in %s" % (WATCHER, USER)
    ]
    assert result["hosts"]["worker-1"]["auth_refused"] is None


def test_an_error_after_authentication_keeps_the_header(lab):
    agent = lab.agent(0, TO_REBOOT)
    agent.header, agent.wrong_header = USER, UNAUTHENTICATED
    watch = lab.watch(1)
    watch._pollers["worker-0"].cluster_id = "11111111-2222-4333-8444-555555555555"  # gone: 404 after auth
    failure, result = watch.run("rebooted", wait=False)
    assert failure is None and result["auth_header"] == USER
    watch.run("rebooted", wait=False)
    # round 1: Watcher refused, Authorization answered 404; round 2 lists the clusters in Authorization at once
    assert agent.headers == [WATCHER, USER, USER, USER]
    assert [path.split("?")[0] for _round, path in agent.requests] == [
        API + "/clusters/11111111-2222-4333-8444-555555555555"
    ] * 2 + [API + "/clusters", API + "/events"]


def test_a_watcher_persona_token_goes_first_in_watcher_authorization(lab):
    watcher = jwt({"auth_scheme": "watcherAuth", "exp": 1893456000})
    agent = lab.agent(0, TO_REBOOT)
    agent.token = watcher
    failure, result = lab.watch(1, token=watcher, first_header=USER).run("discovered", wait_timeout=60)
    # first_header (as the module computes it from the claims and the release) wins; 403 then the other header
    assert failure is None and result["auth_header"] == WATCHER
    assert agent.headers == [USER, WATCHER, WATCHER]


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
    agent = lab.agent(0, TO_REBOOT)
    agent.token = token
    agent.refuse_claims = refusal  # signed right, refused in both headers for its claims
    failure, result = lab.watch(1, token=token).run("rebooted", wait_timeout=60)
    assert (
        "in Authorization: HTTP %d on GET /clusters: %s; in Watcher-Authorization: HTTP %d"
        % (refusal[0], refusal[1], refusal[0])
        in failure
    )
    assert cause in failure and "pass token: the watcher token" in failure
    assert token not in failure and result["requests"] == 2
