# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The agent client and the poll driver against small HTTP agents on 127.0.1.x.

Every fake agent serves the swagger-shaped JSON of test_agent_progress, checks the
token in the header of its release (with assisted-service's refusals), and
records each request with the poll round it arrived in and the header used, so
the tests check the requests-per-host-per-poll budget. The driver gets a fake
clock whose sleep advances time and runs the actions planned for the next round
(start or stop an agent, start a kubelet), so nothing really sleeps.
"""

import datetime
import http.server
import json
import socket
import ssl
import threading
import time
from urllib.parse import parse_qs, urlsplit

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ansible_collections.openshift_agent.day2.plugins.module_utils._install.client import (
    AgentClient,
    AgentRequestError,
    AgentWatch,
    kubelet_state,
)
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.test_agent_progress import (
    CLUSTER_ID,
    INFRA_ENV_ID,
    cluster,
    event,
    host,
)

TOKEN = "eyJhbGciOiJFUzI1NiJ9.test.signature"  # claims not readable: starts with Watcher-Authorization
WATCHER, USER = "Watcher-Authorization", "Authorization"
UNAUTHENTICATED = (401, "unauthenticated for invalid credentials")
API = "/api/assisted-install/v2"
T0 = datetime.datetime(2025, 1, 20, 10, 0, 0, tzinfo=datetime.timezone.utc)
WRITING = "Writing image to disk"
TO_REBOOT = [
    ("discovering", None, None, "Host discovered"),
    ("known", None, None, "Host is ready to be installed"),
    ("installing-in-progress", WRITING, 30, "reached installation stage Writing image to disk: 30%"),
    ("installing-in-progress", WRITING, 60, "reached installation stage Writing image to disk: 60%"),
    ("installing-in-progress", "Rebooting", 100, "reached installation stage Rebooting"),
]


class FakeAgent:
    """One host's agent: every cluster request moves one step through ``steps`` (the last repeats)."""

    def __init__(self, lab, name, steps, list_with_hosts=True):
        self.lab = lab
        self.name = name
        self.steps = steps
        self.step = -1
        self.list_with_hosts = list_with_hosts
        self.cluster_id = CLUSTER_ID
        self.token = TOKEN
        self.header = WATCHER  # the header this agent's release reads the token from
        # What it answers to the token in the other header (4.18+ in Authorization: 403 for the persona;
        # 4.17 in Watcher-Authorization: that header is no scheme at all).
        self.wrong_header = (403, "authClaim watcherAuth is unauthorized to access")
        self.refuse_claims = None
        self.delay = 0
        self.events = []
        self.requests = []  # (round, path with query)
        self.headers = []  # the auth header of each request
        self.lock = threading.Lock()

    def next_cluster(self):
        with self.lock:
            self.step = min(self.step + 1, len(self.steps) - 1)
            status, stage, percentage, message = self.steps[self.step]
            if message and (not self.events or self.events[-1]["message"] != message):
                self.events.append(event(message, "2025-01-20T10:%02d:%02dZ" % divmod(self.step, 60), self.name))
        answer = cluster(
            [host(self.name, status=status, stage=stage, percentage=percentage, status_info="%s info" % status)]
        )
        answer["id"] = self.cluster_id
        return answer


class AgentHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        agent = self.server.agent
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        sent = [name for name in (WATCHER, USER) if self.headers.get(name)]
        with agent.lock:
            agent.requests.append((agent.lab.round, self.path))
            agent.headers.extend(sent)
        time.sleep(agent.delay)
        refusal = agent_refusal(agent, self.headers)
        if refusal:
            return self.reply(refusal[0], {"code": refusal[0], "message": refusal[1]})
        if url.path == API + "/clusters":
            answer = agent.next_cluster()
            if not (agent.list_with_hosts and query.get("with_hosts") == ["true"]):
                del answer["hosts"]
            return self.reply(200, [answer])
        if url.path == API + "/clusters/" + agent.cluster_id:
            return self.reply(200, agent.next_cluster())
        if url.path == API + "/events" and query.get("infra_env_id") == [INFRA_ENV_ID]:
            return self.reply(200, list(agent.events))
        return self.reply(404, {"kind": "Error", "id": 404, "href": url.path, "code": "404", "reason": "not found"})

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


BAD_SIGNATURE = (401, "Failed to parse token: crypto/ecdsa: verification error\n")


def agent_refusal(agent, headers):
    """assisted-service's refusal of a request (None when it accepts): authentication first, then the persona."""
    right = headers.get(agent.header)
    other = headers.get(USER if agent.header == WATCHER else WATCHER)
    if not (right or other) or (not right and agent.wrong_header == UNAUTHENTICATED):
        return UNAUTHENTICATED  # no header of a scheme this operation has
    if (right or other) != agent.token:
        return BAD_SIGNATURE
    if agent.refuse_claims:
        return agent.refuse_claims  # signed right, but its claims do not pass (persona, missing claim)
    return None if right else agent.wrong_header


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def self_signed(tmp_path, address):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubelet")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / ("%s.crt" % address), tmp_path / ("%s.key" % address)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert_path), str(key_path))
    return context


class Lab:
    """Agents on 127.0.1.N:port, a fake clock, and actions planned per poll round."""

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.port = free_port()
        self.kubelet_port = free_port()
        self.servers = {}
        self.round = 1
        self.seconds = 0.0
        self.plan = {}

    @staticmethod
    def address(index):
        return "127.0.1.%d" % (index + 1)

    def agent(self, index, steps, start=True, **options):
        agent = FakeAgent(self, "worker-%d" % index, steps, **options)
        if start:
            self.start(index, agent)
        return agent

    def start(self, index, agent):
        server = http.server.ThreadingHTTPServer((self.address(index), self.port), AgentHandler)
        server.daemon_threads = True
        server.agent = agent
        self._serve(("agent", index), server)

    def start_kubelet(self, index, serving_certificate=True):
        """A kubelet; without its serving certificate it aborts every handshake with alert internal_error."""
        server = http.server.ThreadingHTTPServer((self.address(index), self.kubelet_port), AgentHandler)
        context = self_signed(self.tmp_path, self.address(index))
        if not serving_certificate:
            context.sni_callback = lambda *_args: ssl.ALERT_DESCRIPTION_INTERNAL_ERROR
        server.socket = context.wrap_socket(server.socket, server_side=True)
        self._serve(("kubelet", index), server)

    def _serve(self, key, server):
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        self.servers[key] = server

    def stop(self, key):
        server = self.servers.pop(key)
        server.shutdown()
        server.server_close()

    def at_round(self, number, action):
        self.plan.setdefault(number, []).append(action)

    # The driver's clock, wall clock and sleep.
    def clock(self):
        return self.seconds

    def now(self):
        return T0 + datetime.timedelta(seconds=self.seconds)

    def sleep(self, seconds):
        self.seconds += seconds
        self.round += 1
        for action in self.plan.pop(self.round, []):
            action()

    def watch(self, count, request_timeout=2, token=TOKEN, first_header=None):
        hosts = [{"name": "worker-%d" % i, "address": self.address(i)} for i in range(count)]
        return AgentWatch(
            hosts,
            token,
            agent_port=self.port,
            kubelet_port=self.kubelet_port,
            request_timeout=request_timeout,
            first_header=first_header,
            clock=self.clock,
            sleeper=self.sleep,
            now=self.now,
        )

    def close(self):
        for key in list(self.servers):
            self.stop(key)


@pytest.fixture
def lab(tmp_path):
    created = Lab(tmp_path)
    yield created
    created.close()


def per_round(agent):
    counts = {}
    for number, _path in agent.requests:
        counts[number] = counts.get(number, 0) + 1
    return counts


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
    client = AgentClient(lab.address(0), lab.port, TOKEN, 2)
    with pytest.raises(AgentRequestError) as missing:
        client.get("/no-such-path")
    assert missing.value.kind == "http_error" and missing.value.status == 404
    assert "HTTP 404 on GET /no-such-path: not found" in str(missing.value)
    with pytest.raises(AgentRequestError) as refused:
        AgentClient(lab.address(5), lab.port, TOKEN, 2).list_clusters()
    assert refused.value.kind == "unreachable" and refused.value.detail == "connection refused"
    assert client.requests == 1


def test_client_times_out_on_a_silent_peer(lab):
    with socket.socket() as silent:
        silent.bind((lab.address(9), 0))
        silent.listen(1)  # accepts the connection but never answers
        client = AgentClient(lab.address(9), silent.getsockname()[1], TOKEN, 1)
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
