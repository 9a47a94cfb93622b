# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""day2_iso's work on real node-joiner output: .jso ISOs after a build and on reuse, per-release rules."""

import base64
import datetime
import importlib.util
import os
import shutil

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._image import build as d2
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import iso as _iso

_spec = importlib.util.spec_from_file_location(
    "node_iso_layout", os.path.join(os.path.dirname(__file__), "fixtures", "iso", "node_iso_layout.py")
)
layout = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layout)

CLUSTER_ID = "5c3d7b2e-0d1e-4f5a-9b8c-1a2b3c4d5e6f"
HOSTS = [{"hostname": "extra-worker-0", "macs": ["52:54:00:6f:00:14"], "interfaces": ["eth0"]}]
SERIAL = "console=ttyS0,115200n8"


class Module:
    def __init__(self, **params):
        self.params = dict(
            {
                "min_token_validity": "24h",
                "pxe": False,
                "dest": "/nonexistent",
                "force": False,
                "live_kernel_arguments": None,
                "node_joiner_image": None,
                "boot_artifacts_base_url": None,
            },
            **params,
        )


class Api:
    """Answers GETs from a dict of paths; records every path asked."""

    def __init__(self, objects=None):
        self.objects = objects or {}
        self.asked = []

    def get(self, target):
        self.asked.append(target.path)
        return self.objects.get(target.path)


def cluster(version=(4, 21)):
    return {
        "cluster_id": CLUSTER_ID,
        "version": "%d.%d.3" % version,
        "version_tuple": version,
        "release_image": "quay.io/x@sha256:1",
        "proxy": None,
        "architecture": "x86_64",
        "platform": "BareMetal",
    }


@pytest.fixture(scope="module")
def node_iso(tmp_path_factory):
    assert not layout.live.required_tools() and shutil.which("cpio")
    work = tmp_path_factory.mktemp("node")
    path = str(work / "node.x86_64.iso")
    layout.build_node_iso(
        str(work),
        path,
        layout.add_nodes_ignition(
            hosts=HOSTS, expiry_variable="AGENT_AUTH_TOKEN_EXPIRY", expiry="2031-01-01T00:00:00Z"
        ),
    )
    os.chmod(path, 0o444)
    return path


def test_reuse_reads_the_expiry_of_a_jso_iso(node_iso):
    expiry = d2.Builder.iso_token_expiry(node_iso)
    assert expiry == datetime.datetime(2031, 1, 1, tzinfo=datetime.timezone.utc)


def test_after_a_build_the_cluster_id_is_checked_and_kargs_added(node_iso, tmp_path):
    copy = str(tmp_path / "copy.iso")
    shutil.copyfile(node_iso, copy)
    os.chmod(copy, 0o600)
    builder = d2.Builder(Module(live_kernel_arguments=SERIAL), Api(), cluster())
    builder.finish_iso(copy)
    assert _iso.read_kargs(copy).endswith(" " + SERIAL)
    result = builder.iso_result("x86_64", copy, copy + ".json", "digest", False, "built", [])
    assert result["cluster_id"] == CLUSTER_ID and result["token_expiry"] == "2031-01-01T00:00:00Z"
    assert result["hosts"] == [{"hostname": "extra-worker-0", "mac_addresses": ["52:54:00:6f:00:14"]}]
    other = d2.Builder(Module(), Api(), dict(cluster(), cluster_id="another-cluster"))
    with pytest.raises(d2.Day2IsoError, match="names cluster '%s', not this cluster 'another-cluster'" % CLUSTER_ID):
        other.finish_iso(copy)


@pytest.mark.parametrize("version, refused", [((4, 17), True), ((4, 18), False), ((4, 21), False)])
def test_pxe_is_refused_below_4_18(version, refused):
    if refused:
        with pytest.raises(
            d2.Day2IsoError,
            match=r"pxe: true needs OpenShift 4.18 or later, but this cluster runs "
            r"4.17.3.*unknown flag: --pxe.*Nothing was created",
        ):
            d2.check_pxe_supported(True, cluster(version))
    else:
        d2.check_pxe_supported(True, cluster(version))
    d2.check_pxe_supported(False, cluster((4, 17)))


def test_node_joiner_image_only_from_openshift_config():
    path = "/api/v1/namespaces/openshift-config/configmaps/installer-images"
    api = Api({path: {"data": {"images.json": '{"installer": "quay.io/installer@sha256:2"}'}}})
    assert d2.Builder(Module(), api, cluster()).find_image(None) == "quay.io/installer@sha256:2"

    class Run:
        @staticmethod
        def image_from_release(release):
            return "from-release:" + release

    empty = Api(
        {
            "/api/v1/namespaces/openshift/configmaps/installer-images": {
                "data": {"images.json": '{"installer": "never-used"}'}
            }
        }
    )
    assert d2.Builder(Module(), empty, cluster()).find_image(Run()) == "from-release:quay.io/x@sha256:1"
    assert empty.asked == [path]


def _secret(**tokens):
    return {"data": {key: base64.b64encode(layout.jwt(claims).encode()).decode() for key, claims in tokens.items()}}


def test_pxe_expiry_from_the_secret_is_the_earliest_token():
    secret = _secret(
        agentAuthToken={"auth_scheme": "agentAuth", "exp": 1900000100},
        watcherAuthToken={"auth_scheme": "watcherAuth", "exp": 1900000000},
    )
    assert d2.pxe_token_expiry(secret) == "2030-03-17T17:46:40Z"
    assert d2.pxe_token_expiry({"data": {"agentAuthToken": "%%%"}}) is None and d2.pxe_token_expiry(None) is None


def test_pxe_expiry_from_the_initrd_itself(tmp_path):
    initrd = str(tmp_path / "node.x86_64-initrd.img")
    layout.pxe_initrd(initrd, layout.add_nodes_ignition(hosts=HOSTS, expiry="2030-06-01T00:00:00Z"))
    assert d2.initrd_token_expiry([str(tmp_path / "node.x86_64-vmlinuz"), initrd]) == "2030-06-01T00:00:00Z"
    assert d2.initrd_token_expiry([str(tmp_path / "node.x86_64.ipxe")]) is None


def test_read_cluster_reads_the_platform():
    def path(resource, name):
        return "/apis/config.openshift.io/v1/%s/%s" % (resource, name)

    node = {
        "metadata": {"name": "m0", "labels": {"node-role.kubernetes.io/master": ""}},
        "status": {"nodeInfo": {"architecture": "s390x"}, "conditions": []},
    }
    api = Api(
        {
            path("clusterversions", "version"): {
                "spec": {"clusterID": CLUSTER_ID},
                "status": {"desired": {"version": "4.19.2", "image": "r"}},
            },
            path("infrastructures", "cluster"): {"spec": {"platformSpec": {"type": "None"}}},
            "/api/v1/nodes": {"items": [node]},
        }
    )
    found = d2.read_cluster(api)
    assert (found["platform"], found["architecture"], found["version_tuple"]) == ("None", "s390x", (4, 19))
    assert path("infrastructures", "cluster") in api.asked and len(api.asked) == 4
