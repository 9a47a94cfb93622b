"""day2_iso against the lab: the ISO checked with independent tools, idempotency, check mode, every failure.

The lab's hosts have addresses in 127.0.0.0/8, which day2_iso accepts only with OPENSHIFT_AGENT_DAY2_ALLOW_LOOPBACK=1
in its environment: conftest.ansible_env sets it for every run.
"""

import base64
import json
import os
import re
import resource
import stat
import subprocess
import time
import urllib.parse
from datetime import datetime, timezone
from unittest import mock

import pytest
import yaml
from conftest import REPO, is_discovery, run_module
from lab import iso as lab_iso

MODULE = "openshift_agent.day2.day2_iso"
MARKER = "LAB-PULL-SECRET-MARKER-7f3a9c"
ISO_SIZE = 8 * 1024 * 1024
SECTOR = 2048
NODE_JOINER_PREFIX = "openshift-node-joiner-"
SERIAL = "console=ttyS0,115200n8"


# ----- helpers -------------------------------------------------------------------------------------
def lab_hosts(lab):
    """The module's ``hosts``: each inventory host's variables plus its name."""
    with open(lab.inventory) as handle:
        inventory = yaml.safe_load(handle)
    return [
        dict(hostvars, name=name) for name, hostvars in inventory["all"]["children"]["new_workers"]["hosts"].items()
    ]


def day2_iso(lab, dest, check_mode=False, **options):
    args = {
        "kubeconfig": lab.kubeconfig,
        "hosts": lab_hosts(lab),
        "dest": str(dest),
        "wait_sleep": 1,
        "pod_start_timeout": 20,
        "build_timeout": 30,
    }
    args.update(options)
    result, output = run_module(MODULE, args, check_mode=check_mode)
    assert MARKER not in output, "the pull secret leaked into the module output"
    return result


def cluster_writes(lab):
    return [r for r in lab.writes() if not is_discovery(r["path"])]


def leftovers(lab):
    """Node-joiner namespaces, ClusterRoles and ClusterRoleBindings still in the lab."""
    return sorted(
        "%s/%s" % (o["kind"], o["metadata"]["name"])
        for o in lab.dump()["objects"]
        if o["kind"] in ("Namespace", "ClusterRole", "ClusterRoleBinding")
        and o["metadata"]["name"].startswith(NODE_JOINER_PREFIX)
    )


def lab_cluster_id(lab):
    cv = next(o for o in lab.dump()["objects"] if o["kind"] == "ClusterVersion")
    return cv["spec"]["clusterID"]


def run(*command, **kwargs):
    return subprocess.run(command, check=True, capture_output=True, **kwargs)


def xorriso_extract(iso, path, out):
    run("xorriso", "-osirrox", "on", "-indev", str(iso), "-extract", path, str(out))
    return out


def file_lba(iso, path):
    """(first sector, sectors) of a file in the ISO, as xorriso reports it."""
    report = run("xorriso", "-indev", str(iso), "-find", path, "-exec", "report_lba", "--").stdout.decode()
    fields = [f.strip() for f in re.search(r"File data lba:(.*)", report).group(1).split(",")]
    return int(fields[1]), int(fields[2])


def iso_names(iso, directory):
    """Rock Ridge names of a directory of the ISO, as xorriso lists them."""
    return sorted(run("xorriso", "-indev", str(iso), "-ls", directory).stdout.decode().split())


def embedded_config(iso, work):
    """config.ign of the ISO, read with xorriso, gzip/xz, cpio only; validated with ignition-validate.

    node-joiner's ISO names it coreos/igninfo.jso (extensions cut to 3 characters) and holds a gzip cpio padded
    with zeros; the .json name and xz are accepted too.
    """
    names = iso_names(iso, "/coreos")
    igninfo = "/coreos/igninfo.jso" if "'igninfo.jso'" in names else "/coreos/igninfo.json"
    info = json.loads(xorriso_extract(iso, igninfo, work / "igninfo").read_text())
    area = xorriso_extract(iso, "/" + info["file"], work / "ignition.img").read_bytes()
    offset = info.get("offset") or 0
    area = area[offset : offset + info["length"]] if info.get("length") else area[offset:]
    if area[:2] == b"\x1f\x8b":
        # gzip warns about the zero fill after the stream ("trailing garbage ignored", exit 2)
        unzipped = subprocess.run(["gzip", "-dc"], input=area, capture_output=True, check=False)
        assert unzipped.returncode in (0, 2) and b"trailing garbage" in unzipped.stderr + b"trailing garbage"
        archive = unzipped.stdout
    else:
        archive = run("xz", "-dc", "--single-stream", input=area).stdout
    listing = run("cpio", "-t", input=archive).stdout.decode().split()
    assert listing == ["config.ign"]
    (work / "cpio").mkdir()
    run("cpio", "-id", "--quiet", input=archive, cwd=str(work / "cpio"))
    config_path = work / "cpio" / "config.ign"
    run("ignition-validate", str(config_path))
    return json.loads(config_path.read_text())


def data_url(source):
    header, data = source.split(",", 1)
    return base64.b64decode(data) if header.endswith(";base64") else urllib.parse.unquote_to_bytes(data)


def env_of(config, path):
    text = next(data_url(f["contents"]["source"]) for f in config["storage"]["files"] if f["path"] == path).decode()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def assert_failed_and_clean(lab, result, dest, *needles):
    assert result.get("failed"), result
    for needle in needles:
        assert needle in result["msg"], "%r not in message:\n%s" % (needle, result["msg"])
    assert leftovers(lab) == []
    assert os.listdir(dest) == [], "something partial was left in dest"


@pytest.fixture(scope="module")
def lab(lab_factory):
    return lab_factory("--hosts", "3", "--iso-size", str(ISO_SIZE))


@pytest.fixture(scope="module")
def built(lab, tmp_path_factory):
    """One ISO built for the three lab hosts, shared by the tests that only read it."""
    dest = tmp_path_factory.mktemp("dest")
    lab.reset_log()
    result = day2_iso(lab, dest)
    assert not result.get("failed"), result.get("msg")
    return dest, result


# ----- the happy path ------------------------------------------------------------------------------
def test_three_hosts_give_node_x86_64_iso_mode_0600(built):
    dest, result = built
    assert result["changed"] is True
    iso = dest / "node.x86_64.iso"
    assert stat.S_IMODE(os.stat(iso).st_mode) == 0o600
    artifact = result["artifacts"][0]
    assert artifact["path"] == str(iso) and artifact["architecture"] == "x86_64" and artifact["reused"] is False
    assert sorted(h["hostname"] for h in artifact["hosts"]) == ["extra-worker-0", "extra-worker-1", "extra-worker-2"]
    assert [s["status"] for s in artifact["stages"]] == ["done"] * len(artifact["stages"])
    assert artifact["stages"][-1]["id"] == "generate-iso"
    assert sorted(os.listdir(dest)) == ["node.x86_64.iso", "node.x86_64.iso.json"]


def test_iso_checked_with_independent_tools(lab, built, tmp_path):
    dest, result = built
    iso = dest / "node.x86_64.iso"
    config = embedded_config(iso, tmp_path)
    contents = [data_url(f["contents"]["source"]).decode("utf-8", "replace") for f in config["storage"]["files"]]
    everything = json.dumps(config) + "".join(contents)
    for host in lab_hosts(lab):
        assert host["mac_address"] in everything
    env = env_of(config, "/etc/assisted/add-nodes.env")
    assert env["CLUSTER_ID"] == lab_cluster_id(lab) == result["artifacts"][0]["cluster_id"]
    expiry = datetime.strptime(env["AUTH_TOKEN_EXPIRY"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    assert env["AUTH_TOKEN_EXPIRY"] == result["artifacts"][0]["token_expiry"]
    assert 47 * 3600 < (expiry - datetime.now(timezone.utc)).total_seconds() <= 48 * 3600


def test_the_iso_has_node_joiners_layout_and_is_read(built):
    """What the lab's node-joiner writes, as 4.17-4.21 do: .jso names, gzip; the module read it all the same."""
    dest, result = built
    iso = dest / "node.x86_64.iso"
    names = iso_names(iso, "/coreos")
    assert "'igninfo.jso'" in names and "'kargs.jso'" in names and "'igninfo.json'" not in names
    start, _count = file_lba(iso, "/images/ignition.img")
    with open(iso, "rb") as handle:
        handle.seek(start * SECTOR)
        assert handle.read(2) == b"\x1f\x8b"
    artifact = result["artifacts"][0]
    assert artifact["cluster_id"] and artifact["token_expiry"] and artifact["kernel_arguments"]


def test_nothing_of_the_run_is_left_in_the_cluster(lab, built):
    assert leftovers(lab) == []
    pods = [
        o
        for o in lab.dump()["objects"]
        if o["kind"] in ("Pod", "ConfigMap", "ServiceAccount")
        and o["metadata"].get("namespace", "").startswith(NODE_JOINER_PREFIX)
    ]
    assert pods == []


def test_second_run_is_unchanged_and_writes_nothing(lab, built, clean):
    dest, first = built
    lab.reset_log()
    result = day2_iso(lab, dest)
    assert result["changed"] is False and result["artifacts"][0]["reused"] is True
    assert result["artifacts"][0]["token_expiry"] == first["artifacts"][0]["token_expiry"]
    assert lab.writes() == []
    assert [r for r in lab.requests() if "/pods" in r["path"]] == []


def test_check_mode_writes_nothing_anywhere(lab, clean, tmp_path):
    lab.reset_log()
    result = day2_iso(lab, tmp_path, check_mode=True)
    assert result["changed"] is True and result["would_build"][0]["architecture"] == "x86_64"
    assert lab.writes() == [] and os.listdir(tmp_path) == []
    # the four GETs before any decision, in this order: ClusterVersion, Infrastructure (platform), Proxy, Nodes;
    # then the lists of what earlier runs may have left (found, not removed, in check mode)
    reads = [r["path"].split("?", 1)[0] for r in lab.requests() if not is_discovery(r["path"])]
    assert reads == [
        "/apis/config.openshift.io/v1/clusterversions/version",
        "/apis/config.openshift.io/v1/infrastructures/cluster",
        "/apis/config.openshift.io/v1/proxies/cluster",
        "/api/v1/nodes",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        "/api/v1/namespaces",
    ]
    assert result["leftovers_found"] == []


def test_check_mode_predicts_no_change_for_an_intact_iso(lab, built, clean):
    dest, _first = built
    lab.reset_log()
    result = day2_iso(lab, dest, check_mode=True)
    assert result["changed"] is False and result["would_build"] == []
    assert lab.writes() == []


def test_token_valid_for_less_than_min_token_validity_rebuilds(lab, built, clean):
    dest, _first = built
    before = os.stat(dest / "node.x86_64.iso").st_ino
    result = day2_iso(lab, dest, min_token_validity="49h")
    assert result["changed"] is True and result["artifacts"][0]["reused"] is False
    assert "min_token_validity" in result["artifacts"][0]["reason"]
    assert os.stat(dest / "node.x86_64.iso").st_ino != before  # a new file was renamed into place
    assert leftovers(lab) == []


def test_a_modified_iso_is_rebuilt(lab, clean, tmp_path):
    assert not day2_iso(lab, tmp_path).get("failed")
    with open(tmp_path / "node.x86_64.iso", "r+b") as handle:
        handle.seek(100 * SECTOR)
        handle.write(b"\1")
    result = day2_iso(lab, tmp_path)
    assert result["changed"] is True and "modified" in result["artifacts"][0]["reason"]


def test_live_kernel_arguments_are_in_the_iso(lab, clean, tmp_path):
    result = day2_iso(lab, tmp_path, live_kernel_arguments=SERIAL)
    assert not result.get("failed"), result.get("msg")
    iso = tmp_path / "node.x86_64.iso"
    assert result["artifacts"][0]["kernel_arguments"].endswith(" " + SERIAL)
    for path, kargs in lab_iso.read_kargs(str(iso)).items():
        assert kargs.endswith(" " + SERIAL), path
    isolinux = xorriso_extract(iso, "/isolinux/isolinux.cfg", tmp_path / "isolinux.cfg").read_text()
    assert SERIAL in isolinux
    embedded_config(iso, tmp_path)  # the Ignition payload survived the edit
    # Same option again: reused; a different one: rebuilt.
    assert day2_iso(lab, tmp_path, live_kernel_arguments=SERIAL)["changed"] is False
    assert day2_iso(lab, tmp_path, live_kernel_arguments="console=tty0")["changed"] is True


def test_pxe_artifacts(lab, clean, tmp_path):
    base_url = "http://127.0.0.1:8080/boot"
    result = day2_iso(lab, tmp_path, pxe=True, boot_artifacts_base_url=base_url)
    assert not result.get("failed"), result.get("msg")
    directory = tmp_path / "boot-artifacts" / "x86_64"
    names = sorted(os.listdir(directory))
    assert any(n.endswith("vmlinuz") for n in names) and any(n.endswith(".ipxe") for n in names)
    assert len([n for n in names if n.endswith(".img")]) == 2
    for entry in result["artifacts"][0]["files"]:
        assert run("sha256sum", entry["path"]).stdout.decode().split()[0] == entry["sha256"]
        assert stat.S_IMODE(os.stat(entry["path"]).st_mode) == 0o600
    ipxe = next(n for n in names if n.endswith(".ipxe"))
    assert base_url in (directory / ipxe).read_text()
    assert leftovers(lab) == []
    # the initrd carries the config: iso_info reads it, and the expiry day2_iso recorded is the initrd's
    info = run_module("openshift_agent.day2.iso_info", {"path": str(directory / "node.x86_64-initrd.img")})[0]
    assert info["layout"] == "pxe-initrd" and info["cluster_id"] == lab_cluster_id(lab)
    assert info["token_expiry"] == result["artifacts"][0]["token_expiry"] and info["valid"] is True
    assert sorted(h["hostname"] for h in info["hosts"]) == sorted(h["name"] for h in lab_hosts(lab))
    lab.reset_log()
    assert day2_iso(lab, tmp_path, pxe=True, boot_artifacts_base_url=base_url)["changed"] is False
    assert lab.writes() == []


def test_a_base_url_for_an_iso_is_refused_before_any_write(lab, clean, tmp_path):
    lab.reset_log()
    result = day2_iso(lab, tmp_path, boot_artifacts_base_url="http://127.0.0.1:8080/boot")
    assert result["failed"] and "used by node-joiner only for PXE files, on every platform" in result["msg"]
    assert cluster_writes(lab) == [] and os.listdir(tmp_path) == []


def test_node_joiner_image_from_the_release_payload(lab, clean, tmp_path):
    """Without ConfigMap installer-images the image comes from a pod running the release image."""
    cm = next(
        o for o in lab.dump()["objects"] if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "installer-images"
    )
    installer = json.loads(cm["data"]["images.json"])["installer"]
    subprocess.run(
        [
            str(REPO / ".venv" / "bin" / "python"),
            "-c",
            (
                "import kubernetes.config as c, kubernetes.client as k; c.load_kube_config(%r); "
                "k.CoreV1Api().delete_namespaced_config_map('installer-images', 'openshift-config')"
            )
            % lab.kubeconfig,
        ],
        check=True,
    )
    try:
        result = day2_iso(lab, tmp_path)
        assert not result.get("failed"), result.get("msg")
        assert result["node_joiner_image"] == installer
        creates = [r["path"] for r in lab.writes() if r["method"] == "POST" and r["path"].endswith("/pods")]
        assert len(creates) == 2  # the release pod, then the node-joiner pod
    finally:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "data": cm["data"],
            "metadata": {"name": "installer-images", "namespace": "openshift-config"},
        }
        subprocess.run(
            [
                str(REPO / ".venv" / "bin" / "python"),
                "-c",
                (
                    "import json, kubernetes.config as c, kubernetes.client as k; c.load_kube_config(%r); "
                    "k.CoreV1Api().create_namespaced_config_map('openshift-config', json.loads(%r))"
                )
                % (lab.kubeconfig, json.dumps(body)),
            ],
            check=True,
        )
    assert leftovers(lab) == []


# ----- input errors: nothing is written ------------------------------------------------------------
def test_unknown_host_key_is_named(lab, clean, tmp_path):
    hosts = lab_hosts(lab)
    hosts[1]["mac_adress"] = hosts[1].pop("mac_address")
    lab.reset_log()
    result = run_module(MODULE, {"kubeconfig": lab.kubeconfig, "hosts": hosts, "dest": str(tmp_path)})[0]
    assert result["failed"] and "Unsupported parameters" in result["msg"] and "hosts.mac_adress" in result["msg"]
    assert "Supported parameters include: " in result["msg"] and "mac_address" in result["msg"]
    assert [r for r in lab.requests() if not is_discovery(r["path"])] == [] and os.listdir(tmp_path) == []


def test_bmc_password_is_refused_and_never_shown(lab, clean, tmp_path):
    """day2_iso takes the host records of workers_check, which carry the BMC address and user but never the password
    (a secret): a password is refused, and even at -vvv it is not shown."""
    hosts = lab_hosts(lab)
    hosts[0].update(bmc_address="https://127.0.0.1:1", bmc_username="admin", bmc_password="BMC-SECRET-4c1f")
    result, output = run_module(
        MODULE, {"kubeconfig": lab.kubeconfig, "hosts": hosts, "dest": str(tmp_path)}, verbosity=3
    )
    refused = result["msg"].split("Supported parameters")[0]
    assert result["failed"] and "hosts.bmc_password" in refused and "bmc_address" not in refused
    assert "Traceback" not in output and "BMC-SECRET-4c1f" not in output


def test_loopback_hosts_are_refused_without_the_lab_variable(lab, clean, tmp_path):
    lab.reset_log()
    result, _output = run_module(
        MODULE,
        {"kubeconfig": lab.kubeconfig, "hosts": lab_hosts(lab), "dest": str(tmp_path)},
        env={"OPENSHIFT_AGENT_DAY2_ALLOW_LOOPBACK": "0"},
    )
    assert result["failed"] and "invalid hosts, nothing was written" in result["msg"]
    assert 'host extra-worker-0: field "ip" value "127.0.111.20" is a loopback address' in result["msg"]
    # day2_iso alone does not read the machine networks: the lab's switch is named by preflight (test_workers_check)
    assert "use a unicast address of the host's network" in result["msg"]
    assert {p["host"] for p in result["problems"]} == {"extra-worker-0", "extra-worker-1", "extra-worker-2"}
    assert cluster_writes(lab) == [] and os.listdir(tmp_path) == []


def test_architecture_pairing_is_checked(lab, clean, tmp_path):
    hosts = lab_hosts(lab)
    hosts[2]["cpu_architecture"] = "s390x"
    lab.reset_log()
    result = run_module(MODULE, {"kubeconfig": lab.kubeconfig, "hosts": hosts, "dest": str(tmp_path)})[0]
    assert result["failed"] and "extra-worker-2" in result["msg"] and "cpu_architecture" in result["msg"]
    # node-joiner's own rule: the lab cluster's platform is BareMetal
    assert 'cannot join this BareMetal cluster: CPU architecture "s390x" only supports platform "none"' in result["msg"]
    assert cluster_writes(lab) == [] and os.listdir(tmp_path) == []


# ----- failures: message with stages and log, nothing left ------------------------------------------
def test_image_pull_failure(lab, clean, tmp_path):
    """Waited out as oc waits (here pod_start_timeout), then named with the image, its registry, the kubelet's own
    error from its Failed Event, and the setting to change."""
    image = "quay.io/example/nodejoiner-typo:4.18"
    result = day2_iso(lab, tmp_path, node_joiner_image=image, pod_start_timeout=3)
    assert_failed_and_clean(
        lab,
        result,
        tmp_path,
        f"image pull failure: pod {result['namespace']}/node-joiner on node master-0 cannot pull {image} from quay.io",
        f'(ImagePullBackOff: Failed to pull image "{image}": initializing source docker://{image}: ',
        "manifest unknown). Check that the registry serves the image",
        "set node_joiner_image (day2_node_joiner_image)",
        "(pod_start_timeout 3s passed)",
        "were deleted",
    )


def test_an_invalid_image_name_fails_at_once(lab, clean, tmp_path):
    """InvalidImageName is never retried (oc fails at once too): the 10-minute pod_start_timeout is not waited."""
    started = time.monotonic()
    result = day2_iso(lab, tmp_path, node_joiner_image="Quay.io/Example/Node-Joiner:4.18", pod_start_timeout=600)
    assert time.monotonic() - started < 120
    assert_failed_and_clean(
        lab, result, tmp_path, "(InvalidImageName: Failed to apply default image tag", "invalid reference format"
    )
    assert "pod_start_timeout" not in result["msg"]


NO_LIMIT = "neither oc adm node-image nor this collection sets one"


@pytest.mark.parametrize(
    "death, needles",
    [
        (
            "oom",
            [
                "/node-joiner on node master-0: container node-joiner was killed by the OOM killer (OOMKilled, exit "
                f"code 137): it had no memory limit ({NO_LIMIT}), so node master-0 ran out of memory",
            ],
        ),
        (
            "evicted",
            [
                "/node-joiner on node master-0 was evicted by the kubelet: The node was low on resource: memory. ",
                "(free memory on node master-0, then run again)",
            ],
        ),
        (
            "evicted_emptydir",
            ['was evicted by the kubelet: Usage of EmptyDir volume "assets" exceeds the limit "4Gi".', "no setting"],
        ),
    ],
)
def test_a_dead_node_joiner_pod_is_named_by_its_cause(lab, clean, tmp_path, death, needles):
    """The pod's container killed mid-run (OOM killer, eviction): the message says so from the pod's status and
    Events, not that exec into a completed pod failed, with the stages and the log so far."""
    lab.control("POST", "/faults", {"nodejoiner": death})
    result = day2_iso(lab, tmp_path)
    assert_failed_and_clean(
        lab, result, tmp_path, *needles, "node-joiner stages: add-nodes-cluster-inspection", "were deleted"
    )
    assert "completed pod" not in result["msg"] and "Extracting base ISO" in result["log_tail"]


def test_node_joiner_failure_carries_report_and_log(lab, clean, tmp_path):
    lab.control("POST", "/faults", {"nodejoiner": "bad_host_config"})
    result = day2_iso(lab, tmp_path)
    assert_failed_and_clean(
        lab,
        result,
        tmp_path,
        "node-joiner failed at stage create-manifest",
        "Invalid IPv4 network prefix length",
        "node-joiner stages: add-nodes-cluster-inspection done",
        "create-manifest failed",
        "level=fatal",
    )
    assert result["stages"][-1] == dict(result["stages"][-1], id="create-manifest", status="failed")
    assert "level=fatal" in result["log_tail"]


def test_keep_on_failure_keeps_the_namespace_for_debugging(lab, clean, tmp_path):
    lab.control("POST", "/faults", {"nodejoiner": "bad_host_config"})
    result = day2_iso(lab, tmp_path, keep_on_failure=True)
    namespace = result["namespace"]
    assert result["failed"] and "keep_on_failure: namespace %s" % namespace in result["msg"]
    assert leftovers(lab) == sorted(
        ["Namespace/" + namespace, "ClusterRole/" + namespace, "ClusterRoleBinding/" + namespace]
    )
    subprocess.run(
        [
            str(REPO / ".venv" / "bin" / "python"),
            "-c",
            (
                "import kubernetes.config as c, kubernetes.client as k; c.load_kube_config(%r); "
                "k.CoreV1Api().delete_namespace(%r)"
            )
            % (lab.kubeconfig, namespace),
        ],
        check=True,
    )
    assert leftovers(lab) == []  # the RBAC objects go with the namespace they are owned by
    assert os.listdir(tmp_path) == []


def test_base_iso_download_failure(lab, clean, tmp_path):
    lab.control("POST", "/faults", {"nodejoiner": "download_failure"})
    result = day2_iso(lab, tmp_path)
    assert_failed_and_clean(lab, result, tmp_path, "fetch-base-iso", "no such host")


# The installer's own fixture for an invalid sshKey (pkg/asset/agent/joiner/addnodesconfig_test.go@24a06e10).
BAD_SSH_KEY = "not a valid ssh key"
SSH_KEY_ERROR = (
    'sshKey: Invalid value: "not a valid ssh key": ssh: no key found; last parsing error for ignored line: '
    "illegal base64 data at input byte 4"
)


def test_node_joiner_failing_before_its_first_stage_fails_at_once_with_its_message(lab, clean, tmp_path):
    """nodes-config refused at load: report.json gets a result but no stage, so end_time stays Go's zero time. The
    module's own timeouts and poll interval (5 s, 30 min) are the defaults: only node-joiner's answer ends it."""
    started = time.monotonic()
    result = day2_iso(lab, tmp_path, ssh_key=BAD_SSH_KEY, wait_sleep=5, build_timeout=1800, pod_start_timeout=900)
    elapsed = time.monotonic() - started
    print("invalid sshKey: day2_iso failed after %.1f s" % elapsed)
    assert_failed_and_clean(
        lab, result, tmp_path, "node-joiner failed: " + SSH_KEY_ERROR, 'failed to load asset "AddNodes Config"'
    )
    assert "without a result" not in result["msg"] and "build_timeout" not in result["msg"]
    assert result["stages"] == [] and "level=fatal" in result["log_tail"]


def test_build_timeout(lab, clean, tmp_path):
    lab.control("POST", "/faults", {"nodejoiner": "timeout"})
    started = time.monotonic()
    result = day2_iso(lab, tmp_path, build_timeout=3)
    assert time.monotonic() - started < 300  # the 3 s build timeout ended it, not the fault's 600 s hang
    assert_failed_and_clean(
        lab,
        result,
        tmp_path,
        "did not finish within build_timeout (3s)",
        "fetch-base-iso.extract-image running",
        "Extracting base ISO from release payload",
    )


def test_interrupted_transfer_is_retried_once(lab, clean, tmp_path):
    lab.control("POST", "/faults", {"exec_cut_after_bytes": "1000000"})
    result = day2_iso(lab, tmp_path)
    assert not result.get("failed"), result.get("msg")
    assert "exec_cut_after_bytes" not in lab.dump()["faults"]  # the cut happened
    assert (
        run("sha256sum", str(tmp_path / "node.x86_64.iso")).stdout.decode().split()[0]
        == result["artifacts"][0]["files"][0]["sha256"]
    )
    assert sorted(os.listdir(tmp_path)) == ["node.x86_64.iso", "node.x86_64.iso.json"]


def test_interrupted_twice_fails(lab, clean, tmp_path):
    lab.control("POST", "/faults", {"exec_cut_after_bytes": "1000000x2"})
    result = day2_iso(lab, tmp_path)
    assert_failed_and_clean(lab, result, tmp_path, "interrupted", "after 2 attempts", "were deleted")


def test_checksum_mismatch_is_retried_once(lab, clean, tmp_path):
    lab.control("POST", "/faults", {"exec_corrupt": "1"})
    result = day2_iso(lab, tmp_path)
    assert not result.get("failed"), result.get("msg")
    assert "exec_corrupt" not in lab.dump()["faults"]


def test_checksum_mismatch_twice_fails(lab, clean, tmp_path):
    lab.control("POST", "/faults", {"exec_corrupt": "2"})
    result = day2_iso(lab, tmp_path)
    assert_failed_and_clean(lab, result, tmp_path, "checksum mismatch", "after 2 attempts")


@pytest.mark.parametrize(
    "rule,resource_name",
    [
        ("all:create:pods", '"pods"'),
        ("all:create:clusterroles", '"clusterroles"'),
        ("all:create:pods/exec", '"pods/exec"'),
    ],
)
def test_forbidden_verb(lab, clean, tmp_path, rule, resource_name):
    lab.control("POST", "/faults", {"deny": rule})
    result = day2_iso(lab, tmp_path)
    assert_failed_and_clean(lab, result, tmp_path, "forbidden", resource_name)


def test_disk_full_at_dest_leaves_nothing(lab, clean, tmp_path):
    """RLIMIT_FSIZE below the ISO size: writes fail with EFBIG (Python ignores SIGXFSZ)."""
    original = subprocess.run
    limit = ISO_SIZE // 2

    def limited(command, **kwargs):
        kwargs["preexec_fn"] = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        return original(command, check=kwargs.pop("check", False), **kwargs)

    with mock.patch("subprocess.run", limited):
        result = day2_iso(lab, tmp_path)
    assert_failed_and_clean(lab, result, tmp_path, "node.x86_64.iso", "File too large", "Nothing partial was left")


# ----- transient API errors ------------------------------------------------------------------------
@pytest.mark.parametrize("fault", [{"api_error_rate": "0.1"}, {"api_reset_rate": "0.3"}], ids=str)
def test_transient_api_errors_are_retried(lab, clean, tmp_path, fault):
    """Every request (discovery, reads, creates, exec upgrades, deletes) meets the fault; the run completes and
    leaves nothing behind. Up to three builds, until a few faulted requests were seen (the lab rolls per request)."""
    faulted = 0
    for attempt in range(3):
        dest = tmp_path / str(attempt)
        dest.mkdir()
        lab.control("POST", "/faults", fault)
        lab.reset_log()
        result = day2_iso(lab, dest)
        faulted += len([r for r in lab.requests() if r["status"] in (500, 503, "reset")])
        lab.control("DELETE", "/faults")
        assert not result.get("failed"), result.get("msg")
        assert leftovers(lab) == []
        assert sorted(os.listdir(dest)) == ["node.x86_64.iso", "node.x86_64.iso.json"]
        assert result["leftovers_removed"] == [] and result["partial_files_removed"] == []
        if faulted >= 3:
            break
    assert faulted >= 1, "no request was faulted: the test proved nothing"
