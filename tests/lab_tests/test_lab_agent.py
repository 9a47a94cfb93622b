"""The simulated hosts per OpenShift release, booted over PXE from media the tests write (agent_media.py):
the agent's headers and personas, media whose tokens expired, the day-2 stages, the kubelet port after
reboot, and PXE boot itself. The lab's release is switched by patching ``ClusterVersion`` status (the host
reads it at boot)."""

from __future__ import annotations

import base64
import socket
import ssl
import time

import agent_media
import pytest
import requests
from conftest import labctl, running_lab
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from lab import jwt, versions
from lab.hosts.progress import REBOOTING_DAY2
from lab.waiting import wait_until

API = "/api/assisted-install/v2"
CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
RELEASES = pytest.mark.parametrize("profile", versions.PROFILES, ids=lambda p: p.name)
OLDEST_AND_NEWEST = pytest.mark.parametrize("profile", (versions.PROFILES[0], versions.NEWEST), ids=lambda p: p.name)
JSON = "application/json"
pytestmark = pytest.mark.usefixtures("no_faults")  # with this module's lab


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    state = str(tmp_path_factory.mktemp("agent-lab"))
    start = ("--hosts", "3", "--agent-port", "0", "--kubelet-port", "0", "--install-seconds", "30")
    with running_lab(state, *start) as started:
        cluster_version = started.api("GET", "/apis/config.openshift.io/v1/clusterversions/version").json()
        started.cluster_id = cluster_version["spec"]["clusterID"]
        yield started


def set_release(lab, profile):
    body = {"status": {"desired": {"version": "%s.5" % profile.name}}}
    response = lab.api(
        "PATCH",
        "/apis/config.openshift.io/v1/clusterversions/version/status",
        body=body,
        content_type="application/merge-patch+json",
    )
    assert response.status_code == 200, response.text


def inventory(lab, index=0):
    return lab.info["hosts"][index]


def boot_pxe(lab, tmp_path, profile, index=0, install_seconds=30, media_profile=None, **media):
    """Boot host ``index`` of a lab at ``profile`` over PXE from media written for ``media_profile`` (default the
    same release); returns (tokens, key, state)."""
    set_release(lab, profile)
    host = inventory(lab, index)
    key = media.pop("key", None) or jwt.new_key()
    config, tokens = agent_media.ignition(
        media_profile or profile, [host], media.pop("cluster_id", lab.cluster_id), key=key, **media
    )
    artifacts = agent_media.write_pxe(str(tmp_path / host["name"]), config)
    body = {"pxe": artifacts, "hosts": [host["name"]], "install_seconds": install_seconds}
    state = lab.control("POST", "/hosts/boot", body)[0]
    return tokens, key, state


def state_of(lab, index=0):
    return lab.host_state(inventory(lab, index)["name"])


def agent(lab, path, headers=None, index=0, **params):
    url = f"http://{inventory(lab, index)['ip']}:{lab.info['agent_port']}{API}{path}"
    return requests.get(url, headers=headers or {}, params=params, timeout=5)


def monitor_headers(profile, tokens):
    """What the installer's monitor sends: 4.17 Authorization, 4.18+ Watcher-Authorization (watcher token)."""
    if profile.watcher_scheme:
        return {"Watcher-Authorization": tokens["watcherAuth"]}
    return {"Authorization": tokens["agentAuth"]}


def registered(lab, profile, tokens, index=0):
    try:
        response = agent(lab, "/clusters", monitor_headers(profile, tokens), index, with_hosts="true")
    except requests.ConnectionError:  # the agent is not listening yet (or any more)
        return None
    clusters = response.json() if response.status_code == 200 else []
    return clusters[0] if clusters and clusters[0]["hosts"] else None


def refused(lab, response, status, message):
    assert response.headers["Content-Type"].startswith(JSON)
    assert (response.status_code, response.json()) == (status, {"code": status, "message": message})
    return True


# ----- headers and personas ---------------------------------------------------------------------------
@RELEASES
def test_the_right_header_and_persona_per_release(lab, tmp_path, profile):
    tokens, key, _state = boot_pxe(lab, tmp_path, profile)
    cluster = wait_until("the host registered", lambda: registered(lab, profile, tokens))
    host = cluster["hosts"][0]
    good = monitor_headers(profile, tokens)
    # The four calls of the installer's monitor, with the media's own key (not the cluster Secret's).
    for path, params in (
        ("/clusters", {}),
        (f"/clusters/{cluster['id']}", {}),
        ("/infra-envs", {}),
        ("/events", {"infra_env_id": host["infra_env_id"]}),
    ):
        response = agent(lab, path, good, **params)
        assert response.status_code == 200 and response.headers["Content-Type"].startswith(JSON), path
    assert agent(lab, f"/clusters/{cluster['id']}", {"X-Secret-Key": tokens["agentAuth"]}).status_code == 200
    listed = agent(lab, f"/infra-envs/{host['infra_env_id']}/hosts", {"X-Secret-Key": tokens["agentAuth"]})
    assert [h["id"] for h in listed.json()] == [host["id"]]
    expired = jwt.mint_claims(key, dict(jwt.unverified_claims(good[next(iter(good))]), exp=1_000_000_000))
    refused(lab, agent(lab, "/clusters", {next(iter(good)): expired}), 401, "Failed to parse token: Token is expired\n")
    refused(
        lab,
        agent(lab, "/clusters", {next(iter(good)): "not-a-jwt"}),
        401,
        "Failed to parse token: token contains an invalid number of segments\n",
    )
    if not profile.watcher_scheme:
        refused(
            lab,
            agent(lab, "/clusters", {"Watcher-Authorization": tokens["agentAuth"]}),
            401,
            "unauthenticated for invalid credentials",
        )
        assert agent(lab, "/events", api_key=tokens["agentAuth"]).status_code == 200
        return
    assert agent(lab, "/clusters", {"Authorization": tokens["userAuth"]}).status_code == 200
    refused(
        lab,
        agent(lab, "/clusters", {"Authorization": tokens["watcherAuth"]}),
        403,
        "authClaim watcherAuth is unauthorized to access",
    )
    refused(
        lab,
        agent(lab, f"/clusters/{cluster['id']}", {"Watcher-Authorization": tokens["agentAuth"]}),
        403,
        "authClaim agentAuth is unauthorized to access",
    )
    refused(
        lab,
        agent(lab, "/infra-envs", {"Watcher-Authorization": jwt.mint(key, "x", 2_000_000_000)}),
        500,
        "malformed auth_scheme claim",
    )
    refused(
        lab,
        agent(lab, "/events", api_key=tokens["userAuth"]),
        401,
        "URL Authentication not allowed for agent local auth",
    )


def test_unknown_paths_and_the_token_rejected_fault(lab, tmp_path):
    profile = versions.NEWEST
    tokens, _key, _state = boot_pxe(lab, tmp_path, profile)
    wait_until("the host registered", lambda: registered(lab, profile, tokens))
    refused(lab, agent(lab, "/no-such-thing"), 404, f"path {API}/no-such-thing was not found")
    before = state_of(lab)["requests"]
    lab.control("POST", "/faults", {"token_rejected": "extra-worker-0:1"})
    refused(
        lab,
        agent(lab, "/clusters", monitor_headers(profile, tokens)),
        401,
        "Failed to parse token: crypto/ecdsa: verification error\n",
    )
    lab.control("DELETE", "/faults?name=token_rejected")
    assert agent(lab, "/clusters", monitor_headers(profile, tokens)).status_code == 200
    assert state_of(lab)["requests"] == before + 2  # every request counts, refused or not


# ----- media the agent cannot use ------------------------------------------------------------------------
@OLDEST_AND_NEWEST
def test_expired_media_start_an_agent_that_refuses_everything_and_installs_nothing(lab, tmp_path, profile):
    tokens, _key, state = boot_pxe(lab, tmp_path, profile, exp=1_000_000_000, install_seconds=1)
    assert state["phase"] == "agent" and state["token_expiry"] == "2001-09-09T01:46:40Z"
    wait_until("the agent up", lambda: state_of(lab)["agent_up"])
    for header, token in [*list(monitor_headers(profile, tokens).items()), ("X-Secret-Key", tokens["agentAuth"])]:
        refused(lab, agent(lab, "/clusters/x", {header: token}), 401, "Failed to parse token: Token is expired\n")
    wait_until("the refusal", lambda: state_of(lab)["boot_error"])
    state = state_of(lab)
    assert state["boot_error"].startswith(
        "the host's own v2ImportCluster request is refused: 401 Failed to parse token: Token is expired"
    )
    assert state["status"] is None and state["phase"] == "agent" and not state["events"]


def test_a_token_of_another_release_stops_the_host(lab, tmp_path):
    # 4.17 media (infra_env_id tokens, no auth_scheme) on a 4.21 agent: its own import is refused.
    boot_pxe(lab, tmp_path, versions.NEWEST, media_profile=versions.PROFILES[0], install_seconds=1)
    error = wait_until("the refusal", lambda: state_of(lab)["boot_error"])
    assert error.startswith("the host's own v2ImportCluster request is refused: 500 malformed auth_scheme claim")
    assert state_of(lab)["status"] is None


def test_media_for_another_host_or_cluster_or_without_a_key(lab, tmp_path):
    profile = versions.NEWEST
    set_release(lab, profile)
    host = inventory(lab, 1)
    config, _tokens = agent_media.ignition(profile, [inventory(lab, 0)], lab.cluster_id)
    artifacts = agent_media.write_pxe(str(tmp_path / "b"), config)
    state = lab.control("POST", "/hosts/boot", {"pxe": artifacts, "hosts": [host["name"]]})[0]
    assert state["phase"] == "wrong-iso"
    assert state["boot_error"] == (
        f"MAC {host['mac_address']} is not in the ISO (it names 52:54:00:6f:00:14 in "
        f"/etc/assisted/hostconfig/*/mac_addresses): boot an ISO built with host "
        f"{host['name']} in nodes-config"
    )
    _t, _k, state = boot_pxe(lab, tmp_path / "c", profile, index=1, cluster_id="11111111-2222-3333-4444-555555555555")
    assert state["boot_error"].startswith("the ISO is for cluster 11111111-2222-3333-4444-555555555555")
    _t, _k, state = boot_pxe(lab, tmp_path / "d", profile, index=1, public_key_b64="")
    assert state["phase"] == "wrong-iso" and "requires an ecdsa Public Key" in state["boot_error"]
    missing = requests.post(
        lab.control_url + "/hosts/boot", json={"pxe": str(tmp_path / "none"), "hosts": [host["name"]]}, timeout=5
    )
    assert missing.status_code == 400 and "no boot artifacts directory or initrd" in missing.json()["error"]


def test_labctl_boot_pxe_from_the_initrd_itself(lab, tmp_path):
    profile = versions.NEWEST
    set_release(lab, profile)
    host = inventory(lab, 2)
    config, _tokens = agent_media.ignition(profile, [host], lab.cluster_id)
    initrd = agent_media.write_pxe(str(tmp_path), config) + "/node.x86_64-initrd.img"
    printed = labctl("boot", "--state", lab.state, "--pxe", initrd, host["name"]).stdout
    assert '"booted_from": "pxe"' in printed and f'"initrd": "{initrd}"' in printed
    state = state_of(lab, 2)
    assert (state["booted_by"], state["booted_from"], state["iso"], state["openshift"]) == (
        "console",
        "pxe",
        None,
        profile.name,
    )
    both = labctl("boot", "--state", lab.state, "--pxe", initrd, "--iso", initrd, host["name"], check=False)
    assert both.returncode == 2 and "not allowed with argument" in both.stderr


# ----- the day-2 install and the kubelet port --------------------------------------------------------------
@OLDEST_AND_NEWEST
def test_day2_stages_statuses_and_percentages(lab, tmp_path, profile):
    tokens, _key, _state = boot_pxe(lab, tmp_path, profile, install_seconds=3)
    seen = []

    def rebooted():
        if state_of(lab)["phase"] == "rebooted":
            return True
        cluster = registered(lab, profile, tokens)
        if cluster:
            host = cluster["hosts"][0]
            progress = host["progress"]
            entry = (
                host["status"],
                progress["current_stage"],
                progress["installation_percentage"],
                host["status_info"],
            )
            if not seen or seen[-1] != entry:
                seen.append(entry)
        return False

    wait_until("the reboot", rebooted, interval=0.02)
    stages = [(stage, percent) for _s, stage, percent, _i in seen if stage]
    assert list(dict.fromkeys(stages)) == [
        ("Starting installation", 20),
        ("Installing", 40),
        ("Writing image to disk", 60),
        ("Waiting for control plane", 80),
        ("Done", 100),
    ]
    statuses = list(dict.fromkeys(status for status, *_rest in seen))
    assert statuses == ["discovering", "known", "installing", "installing-in-progress", "added-to-existing-cluster"]
    assert all(info == stage for status, stage, _p, info in seen if status == "installing-in-progress")
    assert seen[-1] == ("added-to-existing-cluster", "Done", 100, REBOOTING_DAY2)
    events = state_of(lab)["events"]
    for text in (
        "Starting installation: worker",
        "Writing image to disk",
        "Writing image to disk: 100%",
        "Waiting for control plane",
        "Rebooting",
    ):
        assert f"Host: extra-worker-0, reached installation stage {text}" in events
    assert not any("reached installation stage Done" in event for event in events)


def handshake(lab, index=0):
    """The peer certificate of a TLS handshake with the kubelet port, or the SSLError reason."""
    host = inventory(lab, index)
    context = ssl.create_default_context(cafile=lab.ca)
    context.check_hostname = False
    try:
        with (
            socket.create_connection((host["ip"], lab.info["kubelet_port"]), timeout=5) as raw,
            context.wrap_socket(raw) as tls,
        ):
            tls.sendall(b"GET /metrics HTTP/1.1\r\nHost: kubelet\r\n\r\n")
            answer = tls.recv(4096)
            return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True)), answer
    except ssl.SSLError as exc:
        return exc.reason


def approve_pending(lab, host_name, signer):
    """Approve the pending CSRs of ``signer`` the kubelet of ``host_name`` filed (as the lab's dump lists them)."""

    def pending():
        names = {
            c["name"]
            for c in (lab.control("GET", "/kubelets").get(host_name) or {}).get("csrs", [])
            if c["signer"] == signer
        }
        return [
            c
            for c in lab.api("GET", CSRS).json()["items"]
            if c["metadata"]["name"] in names and not (c.get("status") or {}).get("conditions")
        ]

    for csr in wait_until(f"a pending {signer} CSR of {host_name}", pending):
        csr.setdefault("status", {})["conditions"] = [
            {"type": "Approved", "status": "True", "reason": "Test", "message": "approved by test_lab_agent"}
        ]
        assert lab.api("PUT", f"{CSRS}/{csr['metadata']['name']}/approval", body=csr).status_code == 200


def test_the_kubelet_port_alerts_until_its_serving_certificate_is_issued(lab, tmp_path):
    boot_pxe(lab, tmp_path, versions.NEWEST, index=1, install_seconds=1)
    wait_until("the reboot", lambda: state_of(lab, 1)["phase"] == "rebooted")
    assert handshake(lab, 1) == "TLSV1_ALERT_INTERNAL_ERROR"
    approve_pending(lab, "extra-worker-1", "kubernetes.io/kube-apiserver-client-kubelet")
    assert handshake(lab, 1) == "TLSV1_ALERT_INTERNAL_ERROR"  # a client certificate serves nothing
    approve_pending(lab, "extra-worker-1", "kubernetes.io/kubelet-serving")
    certificate, answer = wait_until(
        "the serving certificate", lambda: (result := handshake(lab, 1)) and not isinstance(result, str) and result
    )
    sans = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["extra-worker-1"]
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.111.21"]
    with open(lab.ca, "rb") as handle:
        assert certificate.issuer == x509.load_pem_x509_certificate(handle.read()).subject
    assert answer.startswith(b"HTTP/1.1 401 Unauthorized\r\n")
    kubelet = state_of(lab, 1)["kubelet"]
    assert kubelet["serving"] is True and kubelet["alerts"] >= 2 and kubelet["handshakes"] >= 1
    served = base64.b64encode(certificate.public_bytes(serialization.Encoding.PEM)).decode()
    issued = [
        c["status"].get("certificate")
        for c in lab.api("GET", CSRS).json()["items"]
        if c["spec"]["signerName"] == "kubernetes.io/kubelet-serving"
    ]
    assert served in issued


@pytest.mark.parametrize(
    "profile", [*[p for p in versions.PROFILES if p.has_pxe][:1], versions.NEWEST], ids=lambda p: p.name
)
def test_pxe_boot_from_the_lab_node_joiners_boot_artifacts(lab, tmp_path, profile):
    from nj_helpers import execute, host, make_run, nodes_config  # the lab node-joiner, run in-process

    set_release(lab, profile)
    target = inventory(lab, 2)
    config = nodes_config(host(target["name"], target["mac_address"], target["ip"]))
    run, assets, secrets = make_run(tmp_path, str(tmp_path / "cache"), config=config, clock=time.time, profile=profile)
    assert execute(run, pxe=True) == 0
    body = {"pxe": str(assets / "boot-artifacts"), "hosts": [target["name"]], "install_seconds": 3}
    state = lab.control("POST", "/hosts/boot", body)[0]
    assert state["booted_from"] == "pxe" and state["initrd"].endswith("/boot-artifacts/node.x86_64-initrd.img")
    tokens = {"watcherAuth": secrets.token("watcherAuthToken"), "agentAuth": secrets.token("agentAuthToken")}
    wait_until("the host registered", lambda: registered(lab, profile, tokens, index=2))
    wait_until("the reboot", lambda: state_of(lab, 2)["phase"] == "rebooted")
    assert state_of(lab, 2)["status"] == "added-to-existing-cluster"
