"""No secret leaves a run of playbooks/add_workers.yml: marker values are planted and every output and file scanned.

The markers: a BMC password (inventory), the pull secret's auth (the lab's LAB-PULL-SECRET-MARKER-7f3a9c), the
bearer token of the kubeconfig used and the agent tokens of Secret openshift-config/agent-auth-token after the
run, each also in its base64 forms (standard and URL-safe, padded or not, at any alignment inside a longer
base64 text) and, for the BMC, as the base64 of ``user:password`` (HTTP basic auth). The playbook runs at -vvvv
on the manual and on the Redfish path with ANSIBLE_LOG_PATH set, HOME and TMPDIR pointed at fresh directories;
stdout, stderr, ansible.log and every file under HOME, TMPDIR and the work directory are scanned. The only files
allowed to hold secrets are the documented artifacts (the ISO, the PXE files), which must be mode 0600; their
JSON sidecars must hold none.
"""

import base64
import functools
import http.server
import json
import shutil
import socketserver
import tempfile
import threading
from pathlib import Path

import pytest
import yaml
from conftest import REPO, VENV_BIN, ansible_env, lab_env, run_ansible
from test_add_workers import console_boots_when_media_are_ready

PLAYBOOK = REPO / "playbooks" / "add_workers.yml"
PULL_SECRET_MARKER = "LAB-PULL-SECRET-MARKER-7f3a9c"
BMC_PASSWORD_MARKER = "BMC-PASSWORD-MARKER-3d8e41b7"
# The documented artifacts that carry the pull secret and the agent token (mode 0600); their sidecars do not.
ARTIFACT_SUFFIXES = (".iso", "-initrd.img", "-rootfs.img", "-vmlinuz", ".ipxe")


def base64_forms(secret):
    """The texts in which ``secret`` can show up base64-encoded, alone or inside a longer encoded text.

    For each of the three alignments a secret can have inside a longer input, only the characters that encode the
    secret's own bits are kept; the alone forms keep their padding too. Standard and URL-safe alphabets.
    """
    raw = secret.encode()
    forms = set()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        alone = encode(raw).decode()
        forms.update((alone, alone.rstrip("=")))
        for offset in range(3):
            text = encode(b"\0" * offset + raw).decode()
            start = -(-8 * offset // 6)  # first character made of the secret's bits only
            end = 8 * (offset + len(raw)) // 6  # last whole character made of them
            forms.add(text[start:end])
    return {form for form in forms if len(form) >= 12}


def markers(secrets):
    """{text to look for: what it is}: every secret and its base64 forms."""
    found = {}
    for label, secret in secrets.items():
        found.setdefault(secret, label)
        for form in base64_forms(secret):
            found.setdefault(form, "%s (base64)" % label)
    return found


def scan_text(where, data, marks):
    return ["%s: %s" % (where, label) for text, label in marks.items() if text.encode() in data]


def scan_tree(root, marks, artifacts):
    """Findings in every file under ``root``; the artifacts are only checked for their mode and collected."""
    findings = []
    for path in sorted(Path(root).rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        if path.name.endswith(ARTIFACT_SUFFIXES):
            artifacts.append(path)
            mode = path.stat().st_mode & 0o777
            if mode != 0o600:
                findings.append("%s: artifact mode %o, not 600" % (path, mode))
            continue
        findings += scan_text(str(path), path.read_bytes(), marks)
    return findings


class Run:
    """One run of the playbook with fresh HOME, TMPDIR and work directory, at -vvvv, logged to ansible.log."""

    def __init__(self, tmp_path):
        self.home = tmp_path / "home"
        # A short TMPDIR: ansible-core's controller RPC server listens on a Unix socket under it
        # (multiprocessing's pymp-*/listener-*), and a socket path longer than 107 bytes cannot be bound.
        self.tmp = Path(tempfile.mkdtemp(prefix="day2-secrets-"))
        self.workdir = tmp_path / "work"
        self.log = tmp_path / "ansible.log"
        self.home.mkdir()
        self.output = ""
        self.rc = None

    def run(self, lab, inventory, *extra):
        # The remote temp directory is ~<user>/.ansible/tmp, the home of the passwd entry, not $HOME: point it
        # into the run's HOME too, so the module files (AnsiballZ) ansible writes there are the run's and scanned.
        env = ansible_env(
            HOME=str(self.home),
            TMPDIR=str(self.tmp),
            ANSIBLE_LOG_PATH=str(self.log),
            ANSIBLE_REMOTE_TEMP=str(self.home / ".ansible" / "tmp"),
            **lab_env(lab),
        )
        for key in ("ANSIBLE_LOCAL_TEMP", "ANSIBLE_KEEP_REMOTE_FILES"):
            env.pop(key, None)
        command = [str(VENV_BIN / "ansible-playbook"), str(PLAYBOOK), "-vvvv", "-i", str(inventory)]
        command += ["-e", "day2_workdir=%s" % self.workdir, "-e", "day2_wait_sleep=1", *extra]
        proc = run_ansible(command, env, timeout=1200)
        self.rc = proc.returncode
        self.output = proc.stdout + proc.stderr
        return self

    def findings(self, marks):
        artifacts = []
        found = scan_text("output", self.output.encode(), marks)
        found += scan_text("ansible.log", self.log.read_bytes(), marks)
        for root in (self.home, self.tmp, self.workdir):
            found += scan_tree(root, marks, artifacts)
        return found, artifacts


@pytest.fixture
def run(tmp_path):
    made = Run(tmp_path)
    yield made
    shutil.rmtree(made.tmp, ignore_errors=True)


def run_secrets(lab, bmc_password):
    """The secrets of a run: the markers, the kubeconfig's token and the agent tokens now in the lab (if any)."""
    kubeconfig = yaml.safe_load(Path(lab.kubeconfig).read_text())
    secrets = {
        "pull secret auth": PULL_SECRET_MARKER,
        "BMC password": bmc_password,
        "BMC basic auth": "admin:%s" % bmc_password,
        "bearer token": kubeconfig["users"][0]["user"]["token"],
    }
    for secret in lab.dump()["objects"]:
        if secret["kind"] == "Secret" and secret["metadata"]["name"] == "agent-auth-token":
            for key, value in secret["data"].items():
                if key.endswith("Token"):
                    secrets["agent token %s" % key] = base64.b64decode(value).decode()
    return secrets


def assert_no_leak(run, lab, bmc_password, sidecar):
    assert run.rc == 0, run.output[-6000:]
    secrets = run_secrets(lab, bmc_password)
    assert [label for label in secrets if label.startswith("agent token")], "the run left no agent-auth-token"
    marks = markers(secrets)
    # The scan finds what it looks for where the secrets are known to be: the lab's kubeconfig (the bearer token)
    # and its state, where the pull secret, the agent tokens and the Redfish password are stored base64-encoded.
    assert scan_text("kubeconfig", Path(lab.kubeconfig).read_bytes(), marks) == ["kubeconfig: bearer token"]
    found = {line.split(": ", 1)[1] for line in scan_text("dump", json.dumps(lab.dump()).encode(), marks)}
    assert {"pull secret auth (base64)", "agent token agentAuthToken (base64)"} <= found, found
    findings, artifacts = run.findings(marks)
    assert findings == [], "\n".join(findings)
    assert artifacts, "no artifact was written"
    # The sidecar was scanned like every other file (it holds no secret) and records what was built.
    assert sorted(entry["path"] for entry in json.loads(sidecar.read_text())["files"]) == sorted(map(str, artifacts))


def test_base64_forms_find_a_secret_at_every_alignment():
    for prefix in (b"", b"x", b"xy", b'{"auths":{"q":{"auth":"'):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(prefix + PULL_SECRET_MARKER.encode() + b'"}}}').decode()
            assert any(form in encoded for form in base64_forms(PULL_SECRET_MARKER)), prefix


def manual_inventory(lab, path):
    """The lab's inventory with BMC settings on every host (the boot method stays manual)."""
    inventory = yaml.safe_load(Path(lab.inventory).read_text())
    hosts = inventory["all"]["children"]["new_workers"]["hosts"]
    for index, host in enumerate(hosts.values()):
        host.update(
            bmc_address="redfish-virtualmedia+https://192.0.2.%d/redfish/v1/Systems/1" % (10 + index),
            bmc_username="admin",
            bmc_password=BMC_PASSWORD_MARKER,
        )
    path.write_text(yaml.safe_dump(inventory))
    return path


def test_no_secret_at_vvvv_on_the_manual_path(lab_factory, tmp_path, run):
    lab = lab_factory("--hosts", "2", "--install-seconds", "6", "--agent-port", "0", "--kubelet-port", "0")
    hosts = [h["name"] for h in lab.info["hosts"]]
    console = console_boots_when_media_are_ready(lab, run.workdir, hosts, told=run.log)
    run.run(lab, manual_inventory(lab, tmp_path / "inventory.yml"))
    console.join(timeout=5)
    assert "Boot each of these hosts" in run.output
    assert_no_leak(run, lab, BMC_PASSWORD_MARKER, run.workdir / "node.x86_64.iso.json")


def test_no_secret_at_vvvv_with_pxe_and_a_bearer_token_in_the_inventory(lab_factory, tmp_path, run):
    """PXE files (the PXE build reads the agent-auth-token Secret too) and the login as k8s_host/k8s_api_key."""
    lab = lab_factory(
        "--variant", "v421", "--hosts", "2", "--install-seconds", "6", "--agent-port", "0", "--kubelet-port", "0"
    )
    inventory = manual_inventory(lab, tmp_path / "inventory.yml")
    document = yaml.safe_load(inventory.read_text())
    token = yaml.safe_load(Path(lab.kubeconfig).read_text())["users"][0]["user"]["token"]
    document["all"]["children"]["new_workers"]["vars"] = {
        "k8s_host": lab.info["api_url"],
        "k8s_api_key": token,
        "k8s_ca_cert": str(lab.state / "ca.crt"),
    }
    inventory.write_text(yaml.safe_dump(document))
    hosts = [h["name"] for h in lab.info["hosts"]]
    console = console_boots_when_media_are_ready(lab, run.workdir, hosts, pxe=True)
    run.run(lab, inventory, "-e", "day2_pxe=true", "-e", "day2_boot_artifacts_base_url=http://127.0.0.1:8088/boot")
    console.join(timeout=5)
    assert_no_leak(run, lab, BMC_PASSWORD_MARKER, run.workdir / "boot-artifacts" / "x86_64.json")


def test_no_secret_at_vvvv_on_the_redfish_path(lab_factory, tmp_path, run):
    lab = lab_factory("--hosts", "2", "--redfish", "--agent-port", "0", "--kubelet-port", "0", "--install-seconds", "6")
    run.workdir.mkdir(mode=0o700)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(run.workdir))
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        run.run(
            lab,
            lab.inventory,
            "-e",
            "day2_boot_method=redfish",
            "-e",
            "day2_iso_url=http://127.0.0.1:%d/node.x86_64.iso" % server.server_address[1],
        )
    finally:
        server.shutdown()
        server.server_close()
    hosts = {h["name"]: h for h in lab.control("GET", "/hosts")}
    assert all(h.get("booted_by") == "redfish" for h in hosts.values()), hosts
    assert_no_leak(run, lab, lab.info["redfish"]["password"], run.workdir / "node.x86_64.iso.json")


def test_no_secret_at_vvvv_when_a_bmc_refuses_the_password(lab_factory, tmp_path, run):
    """A failing Redfish request (401) in check mode, which reads the BMCs: the failure shows no password."""
    lab = lab_factory("--hosts", "1", "--redfish")
    inventory = yaml.safe_load(Path(lab.inventory).read_text())
    for host in inventory["all"]["children"]["new_workers"]["hosts"].values():
        host["bmc_password"] = BMC_PASSWORD_MARKER
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    run.run(
        lab,
        tmp_path / "inventory.yml",
        "--check",
        "-e",
        "day2_boot_method=redfish",
        "-e",
        "day2_iso_url=http://127.0.0.1:9/node.x86_64.iso",
    )
    assert run.rc != 0 and "401" in run.output, run.output[-4000:]
    findings, _artifacts = run.findings(markers(run_secrets(lab, BMC_PASSWORD_MARKER)))
    assert findings == [], "\n".join(findings)
