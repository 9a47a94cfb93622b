"""Platform External (the lab's ``external`` variant, as on Oracle Cloud): node-joiner's minimal ISO. With a base
URL its rootfs is copied back next to the ISO, verified, recorded in the sidecar and named in the result; the whole
add_workers.yml passes day2_boot_artifacts_base_url to it and joins the hosts."""

import json
import os
import stat

import pytest
from conftest import lab_env, run_module, run_playbook
from lab import isobase
from test_add_workers import PLAYBOOK, console_boots_when_iso_is_ready, playbook_args
from test_day2_iso import ISO_SIZE, cluster_writes, day2_iso, leftovers, run, xorriso_extract

BASE_URL = "http://127.0.0.1:8088/rhcos"
ROOTFS_URL = BASE_URL + "/agent.x86_64-rootfs.img"


@pytest.fixture(scope="module")
def external(lab_factory):
    return lab_factory("--variant", "external", "--hosts", "2", "--iso-size", str(ISO_SIZE))


def base_rootfs(tmp_path):
    """The rootfs of the lab's base RHCOS ISO, read with xorriso: what node-joiner must have copied out."""
    base = isobase.build_base_iso(isobase.LAB_CACHE, ISO_SIZE, "x86_64")
    return xorriso_extract(base, "/images/pxeboot/rootfs.img", tmp_path / "base-rootfs.img").read_bytes()


def test_the_iso_build_copies_the_rootfs_back_when_a_base_url_is_given(external, tmp_path):
    dest = tmp_path / "dest"
    dest.mkdir()
    result = day2_iso(external, dest, boot_artifacts_base_url=BASE_URL + "/")  # node-joiner trims the slash
    assert not result.get("failed"), result.get("msg")
    (artifact,) = result["artifacts"]
    iso, rootfs = dest / "node.x86_64.iso", dest / "agent.x86_64-rootfs.img"
    assert (artifact["path"], artifact["rootfs"], artifact["rootfs_url"]) == (str(iso), str(rootfs), ROOTFS_URL)
    assert [f["path"] for f in artifact["files"]] == [str(iso), str(rootfs)]
    for entry in artifact["files"]:
        assert run("sha256sum", entry["path"]).stdout.decode().split()[0] == entry["sha256"]
        assert os.path.getsize(entry["path"]) == entry["size"] and stat.S_IMODE(os.stat(entry["path"]).st_mode) == 0o600
    assert rootfs.read_bytes() == base_rootfs(tmp_path)
    # the minimal ISO: no rootfs of its own, the URL in its kernel arguments, unreadable kargs areas named as such
    assert "'rootfs.img'" not in run("xorriso", "-indev", str(iso), "-ls", "/images/pxeboot").stdout.decode()
    grub = xorriso_extract(str(iso), "/EFI/redhat/grub.cfg", tmp_path / "grub.cfg").read_text()
    assert "'coreos.live.rootfs_url=%s'" % ROOTFS_URL in grub
    assert artifact["kernel_arguments"] is None and len(artifact["hosts"]) == 2
    info = run_module("openshift_agent.day2.iso_info", {"path": str(iso)})[0]
    assert (info["layout"], info["rootfs_url"], info["kernel_arguments"], info["valid"]) == (
        "node-iso",
        ROOTFS_URL,
        None,
        True,
    )
    sidecar = json.loads((dest / "node.x86_64.iso.json").read_text())
    assert sidecar["files"] == artifact["files"]
    assert leftovers(external) == []
    # the same inputs: reused, nothing written; a damaged rootfs is rebuilt
    external.reset_log()
    again = day2_iso(external, dest, boot_artifacts_base_url=BASE_URL + "/")
    assert again["changed"] is False and again["artifacts"][0]["rootfs"] == str(rootfs)
    assert cluster_writes(external) == []
    with open(rootfs, "r+b") as handle:
        handle.write(b"X")
    rebuilt = day2_iso(external, dest, boot_artifacts_base_url=BASE_URL + "/")
    assert rebuilt["changed"] is True and "was modified or damaged" in rebuilt["artifacts"][0]["reason"]
    assert rootfs.read_bytes() == base_rootfs(tmp_path)


def test_without_a_base_url_the_minimal_iso_names_rhcos_own_rootfs(external, tmp_path):
    result = day2_iso(external, tmp_path)
    assert not result.get("failed"), result.get("msg")
    (artifact,) = result["artifacts"]
    assert [f["path"] for f in artifact["files"]] == [str(tmp_path / "node.x86_64.iso")] and artifact["rootfs"] is None
    assert artifact["rootfs_url"].startswith("https://rhcos.mirror.openshift.com/")
    assert artifact["rootfs_url"].endswith("-live-rootfs.x86_64.img")
    assert sorted(os.listdir(tmp_path)) == ["node.x86_64.iso", "node.x86_64.iso.json"]


@pytest.mark.parametrize(
    "options, message",
    [
        ({"live_kernel_arguments": "console=ttyS0"}, "cannot be written into the x86_64 minimal ISO"),
        ({"boot_artifacts_base_url": "http://127.0.0.1:8088/$HOME"}, "holds a '$'"),
        ({"boot_artifacts_base_url": BASE_URL, "output": "config-iso"}, "and output is config-iso"),
    ],
)
def test_what_the_minimal_iso_cannot_take_is_refused_before_any_write(external, tmp_path, options, message):
    external.reset_log()
    result = day2_iso(external, tmp_path, **options)
    assert result["failed"] and message in result["msg"] and "Nothing was created" in result["msg"]
    assert cluster_writes(external) == [] and os.listdir(tmp_path) == []


def test_add_workers_passes_the_base_url_and_joins_the_hosts(lab_factory, tmp_path):
    lab = lab_factory("--variant", "external", "--hosts", "2", "--install-seconds", "6")
    workdir = tmp_path / "work"
    console = console_boots_when_iso_is_ready(lab, workdir, [h["name"] for h in lab.info["hosts"]])
    rc, output = run_playbook(
        PLAYBOOK, *playbook_args(lab, workdir, "-e", "day2_boot_artifacts_base_url=" + BASE_URL), env=lab_env(lab)
    )
    console.join(timeout=5)
    assert rc == 0, output[-6000:]
    assert (workdir / "agent.x86_64-rootfs.img").read_bytes() == base_rootfs(tmp_path)
    nodes = [o for o in lab.dump()["objects"] if o["kind"] == "Node" and o["metadata"]["name"].startswith("extra-")]
    ready = {
        n["metadata"]["name"]
        for n in nodes
        if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"])
    }
    assert ready == {h["name"] for h in lab.info["hosts"]}
