"""Upstream's own node-joiner integration scripts, replayed on the lab's ``nodejoiner-testdata`` variant.

Each test follows one script of openshift/installer cmd/node-joiner/testdata (commits in the test names' docstrings);
the per-script ``setup/`` objects are applied the way the upstream harness applies them (a full replace of the object,
status only through the status subresource).
"""

import json
import os
import re

import pytest
import yaml
from lab import ignition as ign
from lab import iso, seeds
from nj_helpers import execute, make_run, read_report, replace

VARIANT = "nodejoiner-testdata"
MAC = "00:f4:3d:a0:0e:2b"


def _rsa_key():
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key()
    return key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()


RSA_KEY = _rsa_key()


def nodes_config(**top):
    return dict({"hosts": [{"hostname": "extra-worker-0", "interfaces": [{"name": "eth0", "macAddress": MAC}]}]}, **top)


def run_script(tmp_path, iso_cache, objects=None, pxe=False, **top):
    run, assets, _secrets = make_run(tmp_path, iso_cache, VARIANT, config=nodes_config(**top), objects=objects)
    assert execute(run, pxe=pxe) == 0, run.log_text()
    assert (assets / "exit_code").read_text() == "0"
    return run, assets


def ignition_files(assets):
    return ign.files_by_path(iso.read_embedded_ignition(str(assets / "node.x86_64.iso")))


def test_add_nodes(tmp_path, iso_cache):
    """cmd/node-joiner/testdata/add-nodes.txt@ead4c47ae829a90629f8c39693ed0bf61e24412f"""
    _run, assets = run_script(tmp_path, iso_cache)
    files = ignition_files(assets)
    lines = files["/etc/assisted/add-nodes.env"].decode().splitlines()
    assert lines[:3] == [
        "CLUSTER_ID=c37c9544-4320-4380-9d8b-0753a4d9ea57",
        "CLUSTER_NAME=ostest",
        "CLUSTER_API_VIP_DNS_NAME=api.ostest.test.metalkube.org",
    ]
    assert lines[3].startswith("AUTH_TOKEN_EXPIRY=")
    for path in (
        "/etc/assisted/manifests/cluster-image-set.yaml",
        "/etc/assisted/manifests/infraenv.yaml",
        "/etc/assisted/manifests/pull-secret.yaml",
        "/usr/local/bin/add-node.sh",
    ):
        assert path in files
    config = iso.read_embedded_ignition(str(assets / "node.x86_64.iso"))
    assert config["passwd"]["users"] == [{"name": "core", "sshAuthorizedKeys": ["my-sshKey"]}]
    registries = files["/etc/containers/registries.conf"].decode()
    assert 'location = "quay.io/openshift-release-dev/ocp-v4.0-art-dev"' in registries
    assert "mirror-by-digest-only = true" in registries
    assert 'location = "registry.example.com:5000/ocp4/openshift4"' in registries
    assert b"fips=1" in iso.read_file(str(assets / "node.x86_64.iso"), "/EFI/redhat/grub.cfg")
    assert json.loads(files["/etc/assisted/clusterconfig/import-cluster-config.json"])["networking"] == {
        "userManagedNetworking": False
    }


def test_add_nodes_report(tmp_path, iso_cache):
    """cmd/node-joiner/testdata/add-nodes-report.txt@22e4625923c928f318fe8b972a24420a6b0df81f"""
    _run, assets = run_script(tmp_path, iso_cache)
    report = read_report(assets)
    ids = (
        [report["id"]]
        + [s["id"] for s in report["stages"]]
        + [sub["id"] for s in report["stages"] for sub in s.get("sub_stages", [])]
    )
    assert report["id"].startswith("report-addnodes-")
    assert set(ids[1:]) >= {
        "add-nodes-cluster-inspection",
        "create-manifest",
        "ignition",
        "fetch-base-iso",
        "fetch-base-iso.extract-image",
        "fetch-base-iso.verify-version",
        "create-agent-artifacts",
        "create-agent-artifacts.agent-tui",
        "create-agent-artifacts.prepare",
        "generate-iso",
    }
    assert '"exit_code": 0' in (assets / "report.json").read_text()
    inspection = json.loads(report["stages"][0]["result"])
    assert sorted(inspection) == ["Architecture", "PlatformType", "ReleaseImage", "Version"]
    assert inspection["Version"] == "4.25.0" and inspection["Architecture"] == "amd64"


def test_add_nodes_pxe(tmp_path, iso_cache):
    """cmd/node-joiner/testdata/add-nodes-pxe.txt@be8603b19514d0b701a29c99b91c81d4810e8c40"""
    _run, assets = run_script(tmp_path, iso_cache, pxe=True, bootArtifactsBaseURL="http://user-specified-pxe-infra.com")
    artifacts = assets / "boot-artifacts"
    assert sorted(os.listdir(artifacts)) == [
        "node.x86_64-initrd.img",
        "node.x86_64-rootfs.img",
        "node.x86_64-vmlinuz",
        "node.x86_64.ipxe",
    ]
    script = (artifacts / "node.x86_64.ipxe").read_text()
    assert "initrd --name initrd http://user-specified-pxe-infra.com/node.x86_64-initrd.img" in script
    assert "coreos.live.rootfs_url=http://user-specified-pxe-infra.com/node.x86_64-rootfs.img " in script
    assert script.rstrip().splitlines()[2].endswith(" fips=1") and "coreos.liveiso=" not in script


def test_add_nodes_overrides(tmp_path, iso_cache):
    """cmd/node-joiner/testdata/add-nodes-overrides.txt@79576e9b618d3097d6fb27e78789c4e8204220c3: the master node
    replaced by one without labels on arm64; nodes-config's cpuArchitecture and sshKey win."""
    arm_master = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "master-0"},
        "status": {"nodeInfo": {"architecture": "arm64"}},
    }
    objects = replace(seeds.load_seed(VARIANT), "Node", "master-0", lambda node: arm_master)
    _run, assets = run_script(tmp_path, iso_cache, objects=objects, cpuArchitecture="amd64", sshKey=RSA_KEY)
    config = iso.read_embedded_ignition(str(assets / "node.x86_64.iso"))
    assert config["passwd"]["users"][0]["sshAuthorizedKeys"] == [RSA_KEY]
    infraenv = yaml.safe_load(ignition_files(assets)["/etc/assisted/manifests/infraenv.yaml"])
    assert infraenv["metadata"] == {"creationTimestamp": None, "name": "ostest", "namespace": "cluster0"}
    assert infraenv["spec"]["clusterRef"] == {"name": "ostest", "namespace": "cluster0"}
    assert infraenv["spec"]["cpuArchitecture"] == "x86_64" and infraenv["spec"]["proxy"] == {}
    assert infraenv["spec"]["pullSecretRef"] == {"name": "ostest-pull-secret"}
    assert infraenv["spec"]["sshAuthorizedKey"] == RSA_KEY


@pytest.mark.parametrize("platform", ["External", "None"])
def test_add_nodes_user_managed_networking(tmp_path, iso_cache, platform):
    """cmd/node-joiner/testdata/add-nodes-usermanagednetworking-external.txt@de45feddbf0f1fa796f476cb7bb4c15a7b4e04d2
    and -none.txt@3e81c8677997715c02b439744505b1fb6c88db19: a spec-only PUT keeps the seeded status."""
    objects = replace(
        seeds.load_seed(VARIANT),
        "Infrastructure",
        "cluster",
        lambda infra: dict(infra, spec={"platformSpec": {"type": platform}}),
    )
    _run, assets = run_script(tmp_path, iso_cache, objects=objects)
    config = json.loads(ignition_files(assets)["/etc/assisted/clusterconfig/import-cluster-config.json"])
    assert config["networking"] == {"userManagedNetworking": True}


def test_add_nodes_chrony_conf(tmp_path, iso_cache):
    """cmd/node-joiner/testdata/add-nodes-chrony-conf.txt@90521f864968aff0c94842256358ee7a98cafe0f"""
    chrony = {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {
            "name": "50-workers-chrony-configuration",
            "labels": {"machineconfiguration.openshift.io/role": "worker"},
        },
        "spec": {
            "config": {
                "ignition": {"version": "3.2.0"},
                "storage": {
                    "files": [
                        {
                            "path": "/etc/chrony.conf",
                            "mode": 420,
                            "overwrite": True,
                            "contents": {"source": ign.data_url("server foo.ntp.server iburst\n")},
                        }
                    ]
                },
            }
        },
    }
    _run, assets = run_script(tmp_path, iso_cache, objects=[*seeds.load_seed(VARIANT), chrony])
    assert ignition_files(assets)["/etc/chrony.conf"] == b"server foo.ntp.server iburst\n"


def test_kinds_without_a_crd_are_not_found():
    """The upstream envtest has no Network, ClusterOperator, ICSP... CRD: node-joiner never needs them."""
    from lab import clusterinfo

    source = clusterinfo.ObjectsSource(seeds.load_seed(VARIANT), seeds.served_resources(VARIANT))
    with pytest.raises(clusterinfo.NotFound, match="the server could not find the requested resource"):
        source.get("config.openshift.io/v1", "Network", "cluster")
    with pytest.raises(clusterinfo.NotFound, match=re.escape("imagecontentsourcepolicies.operator.openshift.io")):
        source.list("operator.openshift.io/v1alpha1", "ImageContentSourcePolicy")
    assert source.list("config.openshift.io/v1", "ImageDigestMirrorSet")[0]["metadata"]["name"] == "image-digest-mirror"
