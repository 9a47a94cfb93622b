# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""day2_iso output: config-iso without a cluster: the release rule, the parameter rules, the node-joiner command,
and agentconfig.noarch.iso fetched, checked and recorded."""

import gzip
import os
import shutil
import subprocess

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import utcnow
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error, InputError
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.releases import release
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import build
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import node_joiner as nj
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.build import file_sha256, read_sidecar
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.test_iso_day2 import (
    Api,
    Run,
    _secret,
    cluster,
    params,
)

SECRET_PATH = "/api/v1/namespaces/openshift-config/secrets/agent-auth-token"


def _iso(tmp_path, name, volume, files):
    tree = tmp_path / (name + ".tree")
    tree.mkdir()
    for relative, data in files.items():
        (tree / relative).write_bytes(data)
    path = str(tmp_path / name)
    command = ["xorriso", "-rockridge", "on", "-joliet", "off", "-volid", volume, "-outdev", path]
    subprocess.run([*command, "-map", str(tree), "/", "-commit"], check=True, capture_output=True)
    shutil.rmtree(tree)
    return path


@pytest.fixture
def config_iso(tmp_path):
    assert shutil.which("xorriso")
    return _iso(tmp_path, "made.iso", "agent_configimage", {"config.gz": gzip.compress(b"070701...")})


class ConfigRun(Run):
    def build(self, image, nodes_config, pxe, config_iso=False):
        self.built = (image, nodes_config, pxe, config_iso)
        return []


@pytest.mark.parametrize("version, refused", [((4, 17), True), ((4, 18), False), ((4, 21), False)])
def test_config_iso_is_refused_below_4_18_naming_the_release(version, refused):
    the_cluster = cluster(version)
    if refused:
        message = r"config-iso needs OpenShift 4\.18 or later, but this cluster runs 4\.17\.3"
        with pytest.raises(InputError, match=message):
            build.check_release({"pxe": False, "output": "config-iso"}, the_cluster, release(version))
    else:
        build.check_release({"pxe": False, "output": "config-iso"}, the_cluster, release(version))
    build.check_release({"pxe": False, "output": "node-iso"}, cluster((4, 17)), release((4, 17)))


def test_pxe_and_config_iso_exclude_each_other(tmp_path):
    with pytest.raises(InputError, match="pxe: true and output: config-iso exclude each other"):
        build.check_parameters(params(tmp_path, pxe=True, output="config-iso"))


def test_node_joiner_command_asks_for_the_config_iso():
    assert " add-nodes --config-iso --dir=/assets " in nj.node_joiner_command(False, config_iso=True)
    assert "--config-iso" not in nj.node_joiner_command(False)
    command = nj.node_joiner_command(False, config_iso=True)
    pod = nj.node_joiner_pod_manifest({"metadata": {"name": "ns"}}, "r1", "img", command, None)
    assert "--config-iso" in pod["spec"]["containers"][0]["command"][2]


def test_a_config_iso_is_built_recorded_and_reused(config_iso, tmp_path):
    dest = tmp_path / "dest"
    dest.mkdir()
    api = Api({SECRET_PATH: _secret(agentAuthToken={"auth_scheme": "agentAuth", "exp": 1900000000})})
    artifacts = build.Artifacts(params(dest, output="config-iso"), api, cluster(), utcnow(), 3600)
    plan = artifacts.plan("x86_64", "nodes-config")
    path = str(dest / "agentconfig.noarch.iso")
    assert artifacts.path("x86_64") == path and plan.reuse is False
    run = ConfigRun({"agentconfig.noarch.iso": config_iso})
    result = artifacts.build(plan, run, "img")
    assert run.built == ("img", "nodes-config", False, True)
    assert result["files"] == [{"path": path, "sha256": file_sha256(path), "size": os.path.getsize(path)}]
    assert result["path"] == path and "cluster_id" not in result  # not a node ISO: nothing read back
    assert result["token_expiry"] == "2030-03-17T17:46:40Z"  # the Secret's: the config ISO has no add-nodes.env
    assert read_sidecar(path)["inputs_digest"] == plan.digest
    assert artifacts.plan("x86_64", "nodes-config").reuse is True
    # the same inputs for a node ISO are another artifact, with another digest
    node = build.Artifacts(params(dest, output="node-iso"), Api(), cluster(), utcnow(), 3600)
    assert node.plan("x86_64", "nodes-config").digest != plan.digest


def test_a_node_iso_digest_is_unchanged_by_the_output_option(tmp_path):
    with_option = build.Artifacts(params(tmp_path, output="node-iso"), Api(), cluster(), utcnow(), 3600)
    without = build.Artifacts(params(tmp_path), Api(), cluster(), utcnow(), 3600)
    assert with_option.plan("x86_64", "n").digest == without.plan("x86_64", "n").digest


def test_something_else_than_a_config_iso_is_refused(tmp_path):
    other = _iso(tmp_path, "other.iso", "rhcos-421", {"config.gz": b"x"})
    with pytest.raises(Day2Error, match=r"is not a node-joiner config ISO \(volume 'rhcos-421'"):
        build.check_config_iso(other)
    empty = _iso(tmp_path, "empty.iso", "agent_configimage", {"readme": b"x"})
    with pytest.raises(Day2Error, match=r"config\.gz missing"):
        build.check_config_iso(empty)
