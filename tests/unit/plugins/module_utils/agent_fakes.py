# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Fakes for the agent tests: agent JSON and small HTTP agents and kubelets on 127.0.1.x.

The JSON builders make objects in the shapes of the assisted-service swagger (definitions cluster, host,
event). Every fake agent serves that JSON, checks the token in the header of its release (with
assisted-service's refusals), and records each request with the poll round it arrived in and the header used,
so the tests check the requests-per-host-per-poll budget. ``Lab.loop`` gives the engine's loop (agent_wait's
face, plugins/module_utils/_join/engine.py) a fake clock whose sleep advances time and runs the actions planned
for the next round (start or stop an agent, start a kubelet), so nothing really sleeps.
"""

import base64
import datetime
import http.server
import json
import socket
import ssl
import threading
import uuid
from urllib.parse import parse_qs, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ansible_collections.openshift_agent.day2.plugins.module_utils._join import engine
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.token import AgentToken

CLUSTER_ID = "5e6bb4a4-4a35-4cfb-a9a3-7f2c52d1f0a1"
INFRA_ENV_ID = "0b1b8c6e-1c5e-4a9e-9a39-3f4b0c0d1e2f"


def host_id(name):
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, name))


def validations(failing=(), passing=("has-min-cpu-cores",)):
    """validations_info as the agent sends it: a JSON string grouped by category."""
    info = {"hardware": [], "network": []}
    for vid in passing:
        info["hardware"].append({"id": vid, "status": "success", "message": "%s passed" % vid})
    for vid, message in failing:
        info["network"].append({"id": vid, "status": "failure", "message": message})
    return json.dumps(info)


def host(
    name="worker-0",
    status="discovering",
    stage=None,
    percentage=None,
    status_info=None,
    failing=(),
    mac="52:54:00:00:00:20",
    hostname=None,
):
    entry = {
        "kind": "AddToExistingClusterHost",
        "id": host_id(name),
        "href": "/api/assisted-install/v2/infra-envs/%s/hosts/%s" % (INFRA_ENV_ID, host_id(name)),
        "cluster_id": CLUSTER_ID,
        "infra_env_id": INFRA_ENV_ID,
        "status": status,
        "status_info": status_info if status_info is not None else "Host is %s" % status,
        "validations_info": validations(failing),
        "inventory": json.dumps(
            {
                "hostname": hostname or name,
                "interfaces": [{"name": "eth0", "mac_address": mac}],
            }
        ),
        "role": "worker",
        "progress": {},
    }
    if stage:
        entry["progress"] = {
            "current_stage": stage,
            "installation_percentage": percentage,
            "stage_started_at": "2025-01-20T10:00:00.000Z",
        }
    return entry


def cluster(hosts, status="adding-hosts", status_info="cluster is adding hosts to existing OCP cluster"):
    return {
        "kind": "AddHostsCluster",
        "id": CLUSTER_ID,
        "href": "/api/assisted-install/v2/clusters/%s" % CLUSTER_ID,
        "name": "lab",
        "image_info": {},
        "status": status,
        "status_info": status_info,
        "hosts": hosts,
    }


def event(message, when, host_name=None):
    entry = {
        "name": "host_status_updated",
        "cluster_id": CLUSTER_ID,
        "infra_env_id": INFRA_ENV_ID,
        "severity": "info",
        "category": "user",
        "message": message,
        "event_time": when,
    }
    if host_name:
        entry["host_id"] = host_id(host_name)
    return entry


def jwt(claims):
    """A token with these claims (unsigned: nothing here verifies it)."""

    def part(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return "%s.%s.c2ln" % (part({"alg": "ES256", "typ": "JWT"}), part(claims))


def secret(**tokens):
    """Secret openshift-config/agent-auth-token holding these tokens (and the public key node-joiner adds)."""
    data = {key: base64.b64encode(value.encode()).decode() for key, value in tokens.items()}
    data["authTokenPublicKey"] = base64.b64encode(b"LS0tLS1CRUdJTi...").decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "agent-auth-token", "namespace": "openshift-config"},
        "data": data,
    }


EXP = 1893456000  # 2030-01-01T00:00:00Z
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
        self.barrier = None  # a threading.Barrier its first request waits at (to prove the polls run together)
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
        barrier, agent.barrier = agent.barrier, None
        if barrier is not None:
            barrier.wait()  # BrokenBarrierError when the other agents are not asked at the same time
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
        self.said = []  # the loop's progress lines

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

    # The loop's wall clock and sleep.
    def now(self):
        return T0 + datetime.timedelta(seconds=self.seconds)

    def sleep(self, seconds):
        self.seconds += seconds
        self.round += 1
        for action in self.plan.pop(self.round, []):
            action()

    def loop(self, count, target="rebooted", token=TOKEN, first_header=None, **options):
        """agent_wait's loop over worker-0 .. worker-<count-1> until ``target``, on this lab's clock."""
        records = engine.host_records([{"name": "worker-%d" % i, "address": self.address(i)} for i in range(count)])
        settings = {"wait_sleep": 5, "request_timeout": 2, "boot_timeout": 3600, "install_timeout": 3600}
        settings.update(options)
        return engine.JoinRun(
            records,
            engine.Options(
                target=target,
                agent_port=self.port,
                kubelet_port=self.kubelet_port,
                first_header=first_header,
                **settings,
            ),
            self.said.append,
            token=AgentToken(token),
            sleep=self.sleep,
            now=self.now,
        )

    def run(self, count, target="rebooted", **options):
        """``(failure message or None, result, loop)`` of one run of ``loop``."""
        loop = self.loop(count, target, **options)
        try:
            return None, loop.run(), loop
        except engine.JoinError as failure:
            return failure.message, failure.result, loop

    def close(self):
        for key in list(self.servers):
            self.stop(key)


def requests(loop):
    """The agent requests the loop sent, every host together (each try counts)."""
    return sum(host.agent.requests for host in loop.hosts)


def per_round(agent):
    counts = {}
    for number, _path in agent.requests:
        counts[number] = counts.get(number, 0) + 1
    return counts
