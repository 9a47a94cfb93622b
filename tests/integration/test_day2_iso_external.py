"""Platform External (the lab's ``external`` variant, as on Oracle Cloud; ``v417-external`` on 4.17).

node-joiner 4.17 writes a minimal node ISO there, which fetches the RHCOS stream's rootfs and whose kernel-argument
areas disagree on x86_64: day2_iso reads and reuses it, names its rootfs URL, and refuses to edit its kernel
arguments before anything is created. From 4.18 the node ISO is a full one; the whole add_workers.yml joins the
hosts. bootArtifactsBaseURL is read for PXE files only: a base URL for an ISO is refused on External too."""

import os

import pytest
from conftest import lab_env, run_module, run_playbook
from test_add_workers import PLAYBOOK, console_boots_when_iso_is_ready, playbook_args
from test_day2_iso import ISO_SIZE, SERIAL, cluster_writes, day2_iso, leftovers, run, xorriso_extract

STREAM_ROOTFS = (
    "https://rhcos.mirror.openshift.com/art/storage/prod/streams/4.17-9.4/builds/417.94.202502051822-0/x86_64/"
    "rhcos-417.94.202502051822-0-live-rootfs.x86_64.img"
)


@pytest.fixture(scope="module")
def v417_external(lab_factory):
    return lab_factory("--variant", "v417-external", "--hosts", "2", "--iso-size", str(ISO_SIZE))


@pytest.fixture(scope="module")
def external(lab_factory):
    return lab_factory("--variant", "external", "--hosts", "2", "--iso-size", str(ISO_SIZE))


def test_417s_minimal_iso_is_built_read_named_and_reused(v417_external, tmp_path):
    result = day2_iso(v417_external, tmp_path)
    assert not result.get("failed"), result.get("msg")
    (artifact,) = result["artifacts"]
    iso = tmp_path / "node.x86_64.iso"
    assert (artifact["path"], artifact["rootfs_url"], artifact["rootfs"]) == (str(iso), STREAM_ROOTFS, None)
    assert artifact["kernel_arguments"] is None and len(artifact["hosts"]) == 2 and artifact["cluster_id"]
    assert [f["path"] for f in artifact["files"]] == [str(iso)]
    # what node-joiner wrote, read with xorriso: no rootfs inside, the stream's URL in grub.cfg
    assert "'rootfs.img'" not in run("xorriso", "-indev", str(iso), "-ls", "/images/pxeboot").stdout.decode()
    grub = xorriso_extract(str(iso), "/EFI/redhat/grub.cfg", tmp_path / "grub.cfg").read_text()
    assert "'coreos.live.rootfs_url=%s'" % STREAM_ROOTFS in grub
    info = run_module("openshift_agent.day2.iso_info", {"path": str(iso)})[0]
    assert (info["layout"], info["rootfs_url"], info["kernel_arguments"], info["valid"]) == (
        "node-iso",
        STREAM_ROOTFS,
        None,
        True,
    )
    assert leftovers(v417_external) == []
    v417_external.reset_log()
    again = day2_iso(v417_external, tmp_path)
    assert again["changed"] is False and again["artifacts"][0]["rootfs_url"] == STREAM_ROOTFS
    assert cluster_writes(v417_external) == []


def test_417s_minimal_iso_takes_no_live_kernel_arguments_refused_before_any_write(v417_external, tmp_path):
    v417_external.reset_log()
    result = day2_iso(v417_external, tmp_path, live_kernel_arguments=SERIAL)
    assert result["failed"] and "cannot be written into the x86_64 minimal ISO node-joiner 4.17" in result["msg"]
    assert "Nothing was created" in result["msg"]
    assert cluster_writes(v417_external) == [] and os.listdir(tmp_path) == []


def test_from_418_the_node_iso_on_external_is_a_full_one(external, tmp_path):
    result = day2_iso(external, tmp_path, live_kernel_arguments=SERIAL)
    assert not result.get("failed"), result.get("msg")
    (artifact,) = result["artifacts"]
    assert artifact["rootfs_url"] is None and artifact["kernel_arguments"].endswith(SERIAL)
    iso = str(tmp_path / "node.x86_64.iso")
    assert "'rootfs.img'" in run("xorriso", "-indev", iso, "-ls", "/images/pxeboot").stdout.decode()


@pytest.mark.parametrize("variant", ["external", "v417_external"])
def test_a_base_url_for_an_iso_is_refused_on_external_too_before_any_write(request, variant, tmp_path):
    lab = request.getfixturevalue(variant)
    lab.reset_log()
    result = day2_iso(lab, tmp_path, boot_artifacts_base_url="http://127.0.0.1:8088/rhcos")
    assert result["failed"] and "used by node-joiner only for PXE files, on every platform" in result["msg"]
    assert cluster_writes(lab) == [] and os.listdir(tmp_path) == []


def test_add_workers_joins_the_hosts_on_external(lab_factory, tmp_path):
    lab = lab_factory("--variant", "external", "--hosts", "2", "--install-seconds", "6")
    workdir = tmp_path / "work"
    console = console_boots_when_iso_is_ready(lab, workdir, [h["name"] for h in lab.info["hosts"]])
    rc, output = run_playbook(PLAYBOOK, *playbook_args(lab, workdir), env=lab_env(lab))
    console.join(timeout=5)
    assert rc == 0, output[-6000:]
    nodes = [o for o in lab.dump()["objects"] if o["kind"] == "Node"]
    ready = {
        n["metadata"]["name"]
        for n in nodes
        if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"])
    }
    assert {h["name"] for h in lab.info["hosts"]} <= ready
