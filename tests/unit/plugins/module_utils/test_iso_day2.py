# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""day2_iso's work without a cluster: the cluster read, the plan, artifacts fetched from a stand-in run (real
node-joiner-laid-out ISOs and initrds), the sidecar, per-release rules and what a failure returns."""

import base64
import datetime
import importlib.util
import os
import shutil
import time

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import utcnow
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error, InputError
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import ApiAccessError
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.releases import release
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import build, ignition
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import iso as _iso
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import node_joiner as nj
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.build import file_sha256, read_sidecar

_spec = importlib.util.spec_from_file_location(
    "node_iso_layout", os.path.join(os.path.dirname(__file__), "fixtures", "iso", "node_iso_layout.py")
)
layout = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layout)

CLUSTER_ID = "5c3d7b2e-0d1e-4f5a-9b8c-1a2b3c4d5e6f"
HOSTS = [{"hostname": "extra-worker-0", "macs": ["52:54:00:6f:00:14"], "interfaces": ["eth0"]}]
SERIAL = "console=ttyS0,115200n8"
CONFIG = "/apis/config.openshift.io/v1/%s/%s"
CV, INFRA, PROXY, NODES = (
    CONFIG % ("clusterversions", "version"),
    CONFIG % ("infrastructures", "cluster"),
    CONFIG % ("proxies", "cluster"),
    "/api/v1/nodes",
)
HOST = {"name": "extra-worker-0", "mac_address": "52:54:00:6f:00:14", "ip": "192.168.111.20", "prefix_length": 24}
STAGES = [{"id": "generate-iso", "status": "done"}]


def params(destination, **changes):
    return dict(
        {
            "hosts": [HOST],
            "dest": str(destination),
            "pxe": False,
            "force": False,
            "min_token_validity": "24h",
            "live_kernel_arguments": None,
            "node_joiner_image": None,
            "boot_artifacts_base_url": None,
            "ssh_key": None,
            "wait_sleep": 1,
            "pod_start_timeout": 5,
            "build_timeout": 5,
            "keep_on_failure": False,
            "cluster": None,
        },
        **changes,
    )


def cluster(version=(4, 21)):
    """The facts day2_iso decides with (the keys of build.CLUSTER_KEYS, as day1_facts returns them)."""
    return {
        "cluster_id": CLUSTER_ID,
        "version": "%d.%d.3" % version,
        "release_image": "quay.io/x@sha256:1",
        "proxy_status": {"http_proxy": "", "https_proxy": "", "no_proxy": ""},
        "architecture": "x86_64",
        "platform": "BareMetal",
    }


def cluster_objects(version="4.21.3", platform="BareMetal", architecture="amd64"):
    master = {
        "metadata": {"name": "m0", "labels": {"node-role.kubernetes.io/master": ""}},
        "status": {"nodeInfo": {"architecture": architecture}, "conditions": []},
    }
    return {
        CV: {"spec": {"clusterID": CLUSTER_ID}, "status": {"desired": {"version": version, "image": "r"}}},
        INFRA: {"spec": {"platformSpec": {"type": platform}}},
        PROXY: {"status": {"httpsProxy": "http://proxy:3128"}},
        NODES: {"items": [master]},
    }


class Api:
    """Answers GETs from a dict of paths (a value that is an exception is raised); records every path asked."""

    def __init__(self, objects=None):
        self.objects = objects or {}
        self.asked = []

    def get(self, target):
        self.asked.append(target.path)
        found = self.objects.get(target.path)
        if isinstance(found, Exception):
            raise found
        return found


class Run:
    """Stands in for NodeJoinerRun: 'builds' by handing out files that exist, fetched like NodeJoinerRun.fetch."""

    def __init__(self, files):
        self.files = files  # {name in the pod: local file}
        self.built = None

    def build(self, image, nodes_config, pxe, config_iso=False):
        self.built = (image, nodes_config, pxe)
        return STAGES

    def list_dir(self, path):
        return sorted(self.files)

    def fetch(self, remote_path, dest_path, finish=None):
        temp = dest_path + ".part"
        shutil.copyfile(self.files[os.path.basename(remote_path)], temp)
        os.chmod(temp, 0o600)
        size, sha = os.path.getsize(temp), file_sha256(temp)
        if finish:
            finish(temp)
        os.replace(temp, dest_path)
        return size, sha


@pytest.fixture(scope="module")
def node_iso(tmp_path_factory):
    assert not layout.live.required_tools() and shutil.which("cpio")
    work = tmp_path_factory.mktemp("node")
    path = str(work / "node.x86_64.iso")
    ignition = layout.add_nodes_ignition(
        hosts=HOSTS, expiry_variable="AGENT_AUTH_TOKEN_EXPIRY", expiry="2031-01-01T00:00:00Z"
    )
    layout.build_node_iso(str(work), path, ignition)
    os.chmod(path, 0o444)
    return path


def _artifacts(tmp_path, api=None, the_cluster=None, **changes):
    return build.Artifacts(params(tmp_path, **changes), api or Api(), the_cluster or cluster(), utcnow(), 24 * 3600)


SECRET_PATH = "/api/v1/namespaces/openshift-config/secrets/agent-auth-token"


def secret_with(*tokens):
    """Secret agent-auth-token holding ``tokens``, base64 under *AuthToken keys as node-joiner writes it."""
    return {"data": {"t%dAuthToken" % i: base64.b64encode(value.encode()).decode() for i, value in enumerate(tokens)}}


def holding(iso_path):
    """An Api whose Secret agent-auth-token holds the tokens the ISO at ``iso_path`` carries."""
    return Api({SECRET_PATH: secret_with(*ignition.token_values(_iso.inspect_iso(iso_path)["ignition"]))})


# --- the ISO: fetched, checked, edited, recorded ------------------------------------------------------


def test_iso_facts_read_a_jso_iso(node_iso):
    facts = build.iso_facts(node_iso)
    assert (facts["token_expiry"], facts["cluster_id"]) == ("2031-01-01T00:00:00Z", CLUSTER_ID)
    assert facts["hosts"] == [{"hostname": "extra-worker-0", "mac_addresses": ["52:54:00:6f:00:14"]}]


def test_a_built_iso_gets_its_kernel_arguments_and_a_sidecar_then_is_reused(node_iso, tmp_path):
    api = holding(node_iso)
    artifacts = _artifacts(tmp_path, api=api, live_kernel_arguments=SERIAL)
    plan = artifacts.plan("x86_64", "nodes-config")
    assert plan.reuse is False and "does not exist" in plan.reason
    run = Run({"node.x86_64.iso": node_iso})
    result = artifacts.build(plan, run, "quay.io/installer@sha256:2")
    path = str(tmp_path / "node.x86_64.iso")
    assert run.built == ("quay.io/installer@sha256:2", "nodes-config", False)
    assert _iso.inspect_iso(path)["kargs"].endswith(" " + SERIAL) and result["kernel_arguments"].endswith(SERIAL)
    assert result["files"] == [{"path": path, "sha256": file_sha256(path), "size": os.path.getsize(path)}]
    assert (result["cluster_id"], result["token_expiry"], result["stages"]) == (
        CLUSTER_ID,
        "2031-01-01T00:00:00Z",
        STAGES,
    )
    assert read_sidecar(path)["files"] == result["files"] and result["sidecar"] == path + ".json"
    assert api.asked == []  # the ISO says which tokens it carries: the Secret is not read to build
    again = artifacts.plan("x86_64", "nodes-config")
    assert again.reuse is True and again.digest == plan.digest
    reused = artifacts.reused(again)
    assert reused["reused"] is True and reused["files"] == result["files"] and reused["stages"] == []
    assert artifacts.plan("x86_64", "other nodes-config").reuse is False
    assert _artifacts(tmp_path, live_kernel_arguments="quiet").plan("x86_64", "nodes-config").reuse is False
    assert _artifacts(tmp_path, live_kernel_arguments=SERIAL, force=True).plan("x86_64", "nodes-config").reason == (
        "force is set"
    )


def test_an_iso_of_another_cluster_is_refused_and_nothing_is_left(node_iso, tmp_path):
    artifacts = _artifacts(tmp_path, the_cluster=dict(cluster(), cluster_id="another-cluster"))
    with pytest.raises(Day2Error, match="names cluster '%s', not this cluster 'another-cluster'" % CLUSTER_ID):
        artifacts.build(artifacts.plan("x86_64", "x"), Run({"node.x86_64.iso": node_iso}), "image")
    assert not os.path.exists(tmp_path / "node.x86_64.iso") and not os.path.exists(tmp_path / "node.x86_64.iso.json")


# --- platform External: node-joiner 4.17's minimal ISO, read though its kargs areas disagree ----------------------
ROOTFS_URL = "https://rhcos.mirror.openshift.com/art/storage/prod/rhcos-417.94-live-rootfs.x86_64.img"
PLACEHOLDER = ",/images/assisted_installer_custom.img"


@pytest.fixture(scope="module")
def minimal_iso(tmp_path_factory):
    """A node ISO edited as node-joiner 4.17's minimal ISO of platform External is (the vendored CreateMinimalISO after
    node-joiner renamed kargs.json): rootfs_url on the linux and append lines, the placeholder after initrd=...,
    coreos.liveiso removed, kargs.jso unchanged, so the isolinux area starts inside the inserted placeholder."""
    work = tmp_path_factory.mktemp("minimal")
    live, kargs = layout.live, layout.live.DEFAULT_KARGS.split(" ", 1)[1]
    grub = live.GRUB_PREFIX + live.kargs_region(kargs + " 'coreos.live.rootfs_url=%s'" % ROOTFS_URL) + live.GRUB_SUFFIX
    prefix = live.ISOLINUX_PREFIX.rstrip(" ") + PLACEHOLDER + " "
    isolinux = prefix + live.kargs_region(kargs + " coreos.live.rootfs_url=" + ROOTFS_URL) + live.ISOLINUX_SUFFIX
    path = str(work / "node.x86_64.iso")
    ignition = layout.add_nodes_ignition(hosts=HOSTS, expiry="2031-01-01T00:00:00Z")
    extra = {"EFI/redhat/grub.cfg": grub, "isolinux/isolinux.cfg": isolinux}
    layout.build_node_iso(str(work), path, ignition, extra={k: v.encode() for k, v in extra.items()})
    return path


def test_a_minimal_iso_is_read_though_its_kargs_areas_disagree_and_is_never_edited(minimal_iso, tmp_path):
    info = _iso.inspect_iso(minimal_iso)
    assert info["kargs"] is None and info["rootfs_url"] == ROOTFS_URL and info["summary"]["cluster_id"] == CLUSTER_ID
    facts = build.iso_facts(minimal_iso)
    assert (facts["kernel_arguments"], facts["rootfs_url"], facts["cluster_id"]) == (None, ROOTFS_URL, CLUSTER_ID)
    copy = shutil.copyfile(minimal_iso, str(tmp_path / "copy.iso"))
    os.chmod(copy, 0o600)
    with pytest.raises(_iso.ignition.KargsMismatchError, match="kargs disagree"):
        _iso.append_kernel_arguments(copy, SERIAL)
    assert file_sha256(copy) == file_sha256(minimal_iso)
    assert _iso.iso_info(minimal_iso)["rootfs_url"] == ROOTFS_URL
    assert build.iso_facts(layout_node_iso(tmp_path))["rootfs_url"] is None  # a full ISO has its rootfs


@pytest.mark.parametrize(
    "line",
    [
        "linux /vmlinuz ignition.firstboot 'coreos.live.rootfs_url=%s'" % ROOTFS_URL,  # the vendored isoeditor
        'linux /vmlinuz ignition.firstboot coreos.live.rootfs_url="%s"' % ROOTFS_URL,  # assisted-image-service@a55e383a
        "append initrd=/i.img coreos.live.rootfs_url=%s quiet" % ROOTFS_URL,  # isolinux.cfg
    ],
)
def test_rootfs_url_in_both_quotings(line):
    match = _iso._ROOTFS_URL.search(line)
    assert next(group for group in match.groups() if group) == ROOTFS_URL


def layout_node_iso(tmp_path):
    path = str(tmp_path / "full.iso")
    layout.build_node_iso(str(tmp_path), path, layout.add_nodes_ignition(hosts=HOSTS, expiry="2031-01-01T00:00:00Z"))
    return path


def test_a_minimal_iso_is_built_and_reused_with_its_rootfs_url(minimal_iso, tmp_path):
    artifacts = _artifacts(tmp_path, holding(minimal_iso), dict(cluster((4, 17)), platform="External"))
    result = artifacts.build(artifacts.plan("x86_64", "x"), Run({"node.x86_64.iso": minimal_iso}), "image")
    assert (result["rootfs_url"], result["kernel_arguments"], result["rootfs"]) == (ROOTFS_URL, None, None)
    assert [f["path"] for f in result["files"]] == [str(tmp_path / "node.x86_64.iso")]
    reused = artifacts.reused(artifacts.plan("x86_64", "x"))
    assert reused["reused"] is True and reused["rootfs_url"] == ROOTFS_URL


def test_the_rootfs_of_pxe_files_is_named(tmp_path):
    source, dest = tmp_path / "pod", tmp_path / "dest"
    source.mkdir()
    dest.mkdir()
    for name in ("node.x86_64-initrd.img", "node.x86_64-rootfs.img", "node.x86_64-vmlinuz"):
        (source / name).write_bytes(name.encode())
    artifacts = _artifacts(dest, pxe=True)
    result = artifacts.build(artifacts.plan("x86_64", "x"), Run({n: str(source / n) for n in os.listdir(source)}), "i")
    assert result["rootfs"] == str(dest / "boot-artifacts" / "x86_64" / "node.x86_64-rootfs.img")
    assert "rootfs_url" not in result


@pytest.mark.parametrize(
    "version, platform, changes, architectures, refused",
    [
        ((4, 17), "External", {"live_kernel_arguments": SERIAL}, ["x86_64"], True),
        ((4, 17), "External", {"live_kernel_arguments": SERIAL}, ["aarch64"], False),  # one grub area: editable
        ((4, 17), "External", {"live_kernel_arguments": SERIAL, "pxe": True}, ["x86_64"], False),
        ((4, 17), "BareMetal", {"live_kernel_arguments": SERIAL}, ["x86_64"], False),
        ((4, 18), "External", {"live_kernel_arguments": SERIAL}, ["x86_64"], False),  # a full ISO from 4.18
        ((4, 17), "External", {}, ["x86_64"], False),
    ],
)
def test_live_kernel_arguments_are_refused_for_417s_minimal_iso(version, platform, changes, architectures, refused):
    given, facts = params("/", **changes), dict(cluster(version), platform=platform)
    if refused:
        with pytest.raises(InputError, match=r"cannot be written into the x86_64 minimal ISO node-joiner 4\.17\.3 "):
            build.check_platform(given, facts, release(version), architectures)
    else:
        build.check_platform(given, facts, release(version), architectures)


# --- the token expiry and the tokens: the artifact's own, the Secret's only for a config ISO ---------------------


class Secrets(Api):
    """Api whose agent-auth-token Secret is ``before`` at the first read and ``after`` from the second on."""

    def __init__(self, before, after):
        super().__init__()
        self.answers = [before, after]

    def get(self, target):
        self.asked.append(target.path)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def test_the_iso_says_which_tokens_it_carries_and_when_they_expire(node_iso, tmp_path):
    """Whatever the Secret holds meanwhile (another run refreshed it): the ISO's own tokens are recorded."""
    api = Secrets(secret_with("another-run's-token"), secret_with("another-run's-token"))
    artifacts = _artifacts(tmp_path, api=api)
    result = artifacts.build(artifacts.plan("x86_64", "x"), Run({"node.x86_64.iso": node_iso}), "image")
    record = read_sidecar(result["path"])
    assert result["token_expiry"] == record["token_expiry"] == "2031-01-01T00:00:00Z"  # its add-nodes.env and exp
    assert record["token_digests"] == build.iso_facts(node_iso)["token_digests"] and len(record["token_digests"]) == 3
    assert "token_digests" not in result and result["cluster_id"] == CLUSTER_ID
    plan = artifacts.plan("x86_64", "x")
    assert not plan.reuse and "holds other tokens than %s carries" % result["path"] in plan.reason
    assert _artifacts(tmp_path, api=holding(node_iso)).plan("x86_64", "x").reuse is True


@pytest.fixture(scope="module")
def reused_417_iso(tmp_path_factory):
    """A 4.17 node ISO whose token node-joiner reused: add-nodes.env says 48 h from now, the token's exp 23 h."""
    work, now = tmp_path_factory.mktemp("reused"), int(time.time())
    stated, claim = (
        datetime.datetime.fromtimestamp(now + hours * 3600, tz=datetime.timezone.utc) for hours in (48, 23)
    )
    path = str(work / "node.x86_64.iso")
    ignition = layout.add_nodes_ignition(
        hosts=HOSTS, expiry_variable="AGENT_AUTH_TOKEN_EXPIRY", expiry=stated.strftime("%Y-%m-%dT%H:%M:%SZ"),
        token_exp=now + 23 * 3600,
    )  # fmt: skip
    layout.build_node_iso(str(work), path, ignition)
    return path, stated, claim


def test_a_417_iso_whose_token_was_reused_is_judged_by_the_tokens_exp(reused_417_iso, tmp_path):
    path, stated, claim = reused_417_iso
    artifacts = _artifacts(tmp_path, api=holding(path))
    result = artifacts.build(artifacts.plan("x86_64", "x"), Run({"node.x86_64.iso": path}), "image")
    assert result["token_expiry"] == claim.strftime("%Y-%m-%dT%H:%M:%SZ") != stated.strftime("%Y-%m-%dT%H:%M:%SZ")
    plan = artifacts.plan("x86_64", "x")
    assert not plan.reuse and "expires at %s," % claim.isoformat() in plan.reason and "24h00m" in plan.reason


# --- PXE files -------------------------------------------------------------------------------------------


def _secret(**tokens):
    return {"data": {key: base64.b64encode(layout.jwt(claims).encode()).decode() for key, claims in tokens.items()}}


def test_pxe_expiry_and_tokens_from_the_initrd_itself(tmp_path):
    initrd = str(tmp_path / "node.x86_64-initrd.img")
    config = layout.add_nodes_ignition(hosts=HOSTS, expiry="2030-06-01T00:00:00Z")
    layout.pxe_initrd(initrd, config)
    facts = build.initrd_facts([str(tmp_path / "node.x86_64-vmlinuz"), initrd])
    assert facts == {
        "token_expiry": "2030-06-01T00:00:00Z",
        "token_digests": build.token_digests(ignition.token_values(config)),
    }
    assert build.initrd_facts([str(tmp_path / "node.x86_64.ipxe")]) == {}


def test_pxe_files_without_a_readable_initrd_take_the_expiry_of_the_secret(tmp_path):
    secret = _secret(
        agentAuthToken={"auth_scheme": "agentAuth", "exp": 1900000100},
        watcherAuthToken={"auth_scheme": "watcherAuth", "exp": 1900000000},
    )
    api = Api({"/api/v1/namespaces/openshift-config/secrets/agent-auth-token": secret})
    source = tmp_path / "pod"
    source.mkdir()
    for name in ("node.x86_64-initrd.img", "node.x86_64.ipxe"):
        (source / name).write_bytes(b"not what node-joiner writes")
    dest = tmp_path / "dest"
    dest.mkdir()
    artifacts = _artifacts(dest, api=api, pxe=True)
    run = Run({name: str(source / name) for name in os.listdir(source)})
    result = artifacts.build(artifacts.plan("x86_64", "x"), run, "image")
    assert result["token_expiry"] == "2030-03-17T17:46:40Z"  # the earliest token of the Secret
    assert [os.path.basename(f["path"]) for f in result["files"]] == ["node.x86_64-initrd.img", "node.x86_64.ipxe"]
    assert result["path"] == str(dest / "boot-artifacts" / "x86_64") and "cluster_id" not in result
    assert artifacts.plan("x86_64", "x").reuse is True


def test_pxe_files_after_a_token_refresh_take_the_expiry_of_their_initrd(tmp_path):
    source, dest = tmp_path / "pod", tmp_path / "dest"
    source.mkdir()
    dest.mkdir()
    initrd = str(source / "node.x86_64-initrd.img")
    layout.pxe_initrd(initrd, layout.add_nodes_ignition(hosts=HOSTS, expiry="2030-06-01T00:00:00Z"))
    refreshed = _secret(watcherAuthToken={"auth_scheme": "watcherAuth", "exp": 1900000000})
    artifacts = _artifacts(dest, api=Secrets(None, refreshed), pxe=True)
    result = artifacts.build(artifacts.plan("x86_64", "x"), Run({"node.x86_64-initrd.img": initrd}), "image")
    assert result["token_expiry"] == "2030-06-01T00:00:00Z"


# --- the cluster, the parameters, the release ------------------------------------------------------------


def test_without_the_facts_the_cluster_is_read_in_four_gets_in_a_fixed_order():
    api = Api(cluster_objects(version="4.19.2", platform="None", architecture="s390x"))
    found, row = build.cluster_facts(None, api)
    assert (found["platform"], found["architecture"], row.minor) == ("None", "s390x", (4, 19))
    assert found["proxy_status"] == {"http_proxy": "", "https_proxy": "http://proxy:3128", "no_proxy": ""}
    assert (found["release_image"], found["cluster_id"]) == ("r", CLUSTER_ID)
    assert api.asked == [CV, INFRA, PROXY, NODES]


def test_the_facts_given_are_not_read_again():
    api = Api(cluster_objects())
    found, row = build.cluster_facts(dict(cluster((4, 18)), architecture="arm64"), api)
    assert api.asked == [] and row.minor == (4, 18)
    assert found["architecture"] == "aarch64"  # as Go names it in the facts, as RPM names it in nodes-config
    with pytest.raises(InputError, match="cluster: the facts given lack release_image, proxy_status: pass"):
        build.cluster_facts({k: v for k, v in cluster().items() if k not in ("proxy_status", "release_image")}, api)


@pytest.mark.parametrize(
    "change, message",
    [
        ({CV: {"status": {"desired": {"version": "4.16.9"}}}}, "cluster version 4.16.9 is older than 4.17"),
        ({NODES: {"items": []}}, "no Node labelled node-role.kubernetes.io/master"),
        ({PROXY: ApiAccessError("forbidden", status=403)}, "cannot read what node-joiner needs: proxy: forbidden"),
    ],
)
def test_the_cluster_read_refuses_what_node_joiner_cannot_use(change, message):
    with pytest.raises(Day2Error, match=message):
        build.cluster_facts(None, Api(dict(cluster_objects(), **change)))


@pytest.mark.parametrize("version, refused", [((4, 17), True), ((4, 18), False), ((4, 21), False)])
def test_pxe_is_refused_below_4_18(version, refused):
    if refused:
        with pytest.raises(
            InputError,
            match=r"pxe: true needs OpenShift 4.18 or later, but this cluster runs "
            r"4.17.3.*unknown flag: --pxe.*Nothing was created",
        ):
            build.check_release({"pxe": True}, cluster(version), release(version))
    else:
        build.check_release({"pxe": True}, cluster(version), release(version))
    build.check_release({"pxe": False}, cluster((4, 17)), release((4, 17)))


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"boot_artifacts_base_url": "http://x/"}, "used by node-joiner only for PXE files, on every platform"),
        ({"min_token_validity": "soon"}, "min_token_validity: 'soon' is not a duration"),
        ({"dest": "/nonexistent/dest"}, "dest /nonexistent/dest is not an existing directory"),
    ],
)
def test_parameters_that_cannot_work_are_refused_first(tmp_path, changes, message):
    with pytest.raises(InputError, match=message):
        build.check_parameters(params(tmp_path, **changes))
    assert build.check_parameters(params(tmp_path, min_token_validity="36h")) == 36 * 3600


def test_node_joiner_image_only_from_openshift_config():
    path = "/api/v1/namespaces/openshift-config/configmaps/installer-images"
    api = Api({path: {"data": {"images.json": '{"installer": "quay.io/installer@sha256:2"}'}}})

    class ReleaseRun(nj.NodeJoinerRun):
        def image_from_release(self, release_image):
            return "from-release:" + release_image

    newest = release((4, 21))
    assert ReleaseRun(api, "r", newest).node_joiner_image(None, "quay.io/x@sha256:1") == "quay.io/installer@sha256:2"
    empty = Api({"/api/v1/namespaces/openshift/configmaps/installer-images": {"data": {"images.json": "{}"}}})
    assert (
        ReleaseRun(empty, "r", newest).node_joiner_image("", "quay.io/x@sha256:1") == "from-release:quay.io/x@sha256:1"
    )
    assert empty.asked == [path]
    assert ReleaseRun(empty, "r", newest).node_joiner_image("mine", "quay.io/x@sha256:1") == "mine"
    # oc 4.17 does not look for the ConfigMap (releases: installer_images_configmap): neither does the collection
    assert ReleaseRun(api, "r", release((4, 17))).node_joiner_image(None, "x").startswith("from-release:")
    assert api.asked == [path]


def test_only_amd64_and_arm64_mix(tmp_path):
    """Checked with the hosts (hosts.HostChecker), before anything is created; platform none, so that only this rule
    refuses the s390x host."""
    arm = dict(HOST, name="w2", mac_address="52:54:00:6f:00:15", ip="192.168.111.21", cpu_architecture="arm64")
    both = build.nodes_configs(params(tmp_path, hosts=[HOST, arm]), cluster())
    assert sorted(both) == ["aarch64", "x86_64"]
    s390x = dict(HOST, name="w1", cpu_architecture="s390x")
    only = 'host w1: field "cpu_architecture" value "s390x" cannot join a x86_64 cluster \\(s390x and ppc64le only'
    with pytest.raises(InputError, match=only):
        build.nodes_configs(params(tmp_path, hosts=[s390x]), dict(cluster(), platform="None"))


# --- the whole run -------------------------------------------------------------------------------------


LEFTOVER_LISTS = [
    "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "/api/v1/namespaces",
]


class Module:
    def __init__(self, dest, check_mode=False, diff=False, **changes):
        self.params = params(dest, **changes)
        self.check_mode = check_mode
        self._diff = diff
        self.no_log_values = set()
        self.warnings = []

    def warn(self, message):
        self.warnings.append(message)


class Client:
    class client:
        configuration = None


@pytest.fixture
def connected(monkeypatch):
    api = Api(cluster_objects())
    monkeypatch.setattr(build, "connect", lambda module: (Client(), api))
    return api


def test_with_the_facts_check_mode_reads_only_what_earlier_runs_left(connected, tmp_path):
    result = build.run(Module(tmp_path, check_mode=True, cluster=cluster()))
    assert result["would_build"][0]["architecture"] == "x86_64"
    assert [path.split("?")[0] for path in connected.asked] == LEFTOVER_LISTS


def test_check_mode_reads_four_objects_and_says_what_it_would_build(connected, tmp_path):
    result = build.run(Module(tmp_path, check_mode=True))
    iso = str(tmp_path / "node.x86_64.iso")
    assert result["changed"] is True and "diff" not in result
    assert result["would_build"] == [{"architecture": "x86_64", "path": iso, "reason": "%s does not exist" % iso}]
    assert [(a["path"], a["reused"], a["files"], a["token_expiry"]) for a in result["artifacts"]] == [
        (iso, False, [], None)
    ]
    assert "hostname: extra-worker-0" in result["nodes_configs"]["x86_64"]
    # the four objects, then what earlier runs may have left (found, not removed in check mode)
    assert [path.split("?")[0] for path in connected.asked] == [CV, INFRA, PROXY, NODES, *LEFTOVER_LISTS]
    assert result["leftovers_found"] == [] and result["partial_files_removed"] == []
    assert os.listdir(tmp_path) == []


def test_invalid_hosts_are_an_input_error_with_every_problem(connected, tmp_path):
    hosts = [dict(HOST, ip="192.168.111.0"), dict(HOST, name="Bad", mac_address="zz")]
    with pytest.raises(InputError, match="invalid hosts, nothing was written") as caught:
        build.run(Module(tmp_path, hosts=hosts))
    assert [(p["host"], p["field"]) for p in caught.value.result["problems"]] == [
        ("extra-worker-0", "ip"),
        ("Bad", "name"),
        ("Bad", "mac_address"),
    ]


def test_loopback_hosts_need_the_lab_variable(connected, tmp_path, monkeypatch):
    lab_host = dict(HOST, ip="127.0.111.20", gateway="127.0.111.1")
    monkeypatch.delenv("OPENSHIFT_AGENT_DAY2_ALLOW_LOOPBACK", raising=False)
    with pytest.raises(InputError, match="is a loopback address"):
        build.run(Module(tmp_path, check_mode=True, hosts=[lab_host]))
    monkeypatch.setenv("OPENSHIFT_AGENT_DAY2_ALLOW_LOOPBACK", "1")
    assert build.run(Module(tmp_path, check_mode=True, hosts=[lab_host]))["changed"] is True


def test_a_failed_run_returns_its_stages_log_and_namespace(connected, tmp_path, monkeypatch):
    class FailingRun:
        def __init__(self, *args, **kwargs):
            self.kept, self.cleaned_up, self.cleanup_failures = False, False, []
            self.ns_name = "openshift-node-joiner-x1"

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.cleaned_up = True

        @staticmethod
        def node_joiner_image(configured, _release_image):
            return configured

        def build(self, image, nodes_config, pxe, config_iso=False):
            stages = [{"id": "create-manifest", "status": "failed"}]
            raise nj.RunError("node-joiner failed at stage create-manifest", stages, "log line")

    monkeypatch.setattr(nj, "NodeJoinerRun", FailingRun)
    with pytest.raises(Day2Error) as caught:
        build.run(Module(tmp_path, node_joiner_image="image"))
    message, result = caught.value.message, caught.value.result
    assert message.startswith("node-joiner failed at stage create-manifest (namespace openshift-node-joiner-x1")
    assert "\nnode-joiner stages: create-manifest failed\nnode-joiner pod log (last lines):\nlog line" in message
    assert (result["namespace"], result["stages"], result["log_tail"]) == (
        "openshift-node-joiner-x1",
        [{"id": "create-manifest", "status": "failed"}],
        "log line",
    )
    assert result["node_joiner_image"] == "image" and "x86_64" in result["nodes_configs"] and "changed" not in result
