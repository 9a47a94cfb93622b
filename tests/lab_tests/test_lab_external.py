"""Variant ``external``: node-joiner writes a minimal ISO on platform External, and the rootfs next to it when
nodes-config has ``bootArtifactsBaseURL`` (openshift/installer pkg/asset/agent/image/agentimage.go@e63803a3).
The ISOs are read back with xorriso, the files compared with the base ISO's."""

import json
import pathlib

import pytest
from iso_helpers import xorriso_extract, xorriso_ls
from lab import iso, nodeiso
from nj_helpers import execute, make_run, nodes_config, read_report

BASE_URL = "http://127.0.0.1:8080/rhcos/"  # the trailing slash is trimmed (strings.Trim)
ROOTFS_URL = "http://127.0.0.1:8080/rhcos/agent.x86_64-rootfs.img"


def _text(image, inner, tmp_path):
    path = tmp_path / ("%s-%s" % (image.rsplit("/", 2)[-2], inner.strip("/").replace("/", "_")))
    with open(xorriso_extract(image, inner, str(path))) as handle:
        return handle.read()


@pytest.fixture(scope="module")
def external(tmp_path_factory, iso_cache):
    tmp_path = tmp_path_factory.mktemp("external")
    run_, assets, _secrets = make_run(
        tmp_path, iso_cache, "external", config=nodes_config(bootArtifactsBaseURL=BASE_URL)
    )
    assert execute(run_) == 0, run_.log_text()
    return run_, assets, tmp_path


def test_a_minimal_iso_and_the_rootfs_with_a_base_url(external, iso_cache):
    run_, assets, tmp_path = external
    image = str(assets / "node.x86_64.iso")
    assert sorted(p.name for p in (assets / "boot-artifacts").iterdir()) == ["agent.x86_64-rootfs.img"]
    base = iso.build_base_iso(iso_cache, 8 * 1024 * 1024, "x86_64")
    rootfs = xorriso_extract(base, "/images/pxeboot/rootfs.img", str(tmp_path / "base-rootfs.img"))
    assert pathlib.Path(rootfs).read_bytes() == (assets / "boot-artifacts" / "agent.x86_64-rootfs.img").read_bytes()
    assert "rootfs.img" not in xorriso_ls(image, "/images/pxeboot")
    placeholder = xorriso_extract(image, "/" + nodeiso.RAMDISK, str(tmp_path / "placeholder"))
    assert pathlib.Path(placeholder).read_bytes() == bytes(1024 * 1024)
    grub = _text(image, "/EFI/redhat/grub.cfg", tmp_path)
    linux = next(line for line in grub.splitlines() if line.strip().startswith("linux "))
    assert linux.endswith(" 'coreos.live.rootfs_url=%s'" % ROOTFS_URL) and "coreos.liveiso" not in grub
    initrd = next(line for line in grub.splitlines() if line.strip().startswith("initrd "))
    assert initrd.endswith("/images/ignition.img /images/assisted_installer_custom.img")
    isolinux = _text(image, "/isolinux/isolinux.cfg", tmp_path)
    append = next(line for line in isolinux.splitlines() if line.strip().startswith("append "))
    assert append.startswith("  append initrd=/images/pxeboot/initrd.img,/images/ignition.img,/images/assisted_")
    assert append.endswith(" coreos.live.rootfs_url=" + ROOTFS_URL) and "coreos.liveiso" not in isolinux
    # coreos/kargs.jso is the base ISO's: node-joiner renamed it before the minimal ISO edits looked for kargs.json
    assert json.loads(_text(image, "/coreos/kargs.jso", tmp_path)) == json.loads(
        _text(base, "/coreos/kargs.json", tmp_path)
    )
    assert iso.read_embedded_ignition(image)["ignition"]["version"]  # the embedded config is as on any platform
    log = run_.log_text()
    assert "level=debug msg=Using custom rootfs URL: " + ROOTFS_URL in log
    assert "msg=RootFS file created in: /assets/boot-artifacts. Upload it at " + ROOTFS_URL in log
    assert "msg=Generated minimal ISO at /assets/node.x86_64.iso The ISO is valid up to " in log
    assert "always make sure CCM manifests were added in the openshift directory" in log
    assert read_report(assets)["stages"][-1]["id"] == "generate-iso"


def test_without_a_base_url_the_rootfs_comes_from_the_rhcos_stream(tmp_path, iso_cache):
    run_, assets, _secrets = make_run(tmp_path, iso_cache, "external")
    assert execute(run_) == 0
    assert not (assets / "boot-artifacts").exists()
    stream = run_.info["os_rootfs_url"]
    assert stream.startswith("https://rhcos.mirror.openshift.com/") and stream.endswith("-live-rootfs.x86_64.img")
    grub = _text(str(assets / "node.x86_64.iso"), "/EFI/redhat/grub.cfg", tmp_path)
    assert "'coreos.live.rootfs_url=%s'" % stream in grub
    assert "msg=Using default rootfs URL: " + stream in run_.log_text()


def test_other_platforms_keep_the_full_iso_and_pxe_stays_pxe(tmp_path, iso_cache):
    config = nodes_config(bootArtifactsBaseURL=BASE_URL)
    full, assets, _secrets = make_run(tmp_path / "baremetal", iso_cache, "default", config=config)
    assert execute(full) == 0 and not (assets / "boot-artifacts").exists()
    assert "rootfs.img" in xorriso_ls(str(assets / "node.x86_64.iso"), "/images/pxeboot")
    pxe, assets, _secrets = make_run(tmp_path / "pxe", iso_cache, "external", config=config)
    assert execute(pxe, pxe=True) == 0
    assert "node.x86_64-rootfs.img" in [p.name for p in (assets / "boot-artifacts").iterdir()]


def test_a_dollar_in_the_base_url_is_eaten_as_go_expands_it(tmp_path, iso_cache):
    """The vendored isoeditor puts the URL into a ReplaceAllString template: ``$1b`` names no group and expands to
    nothing in grub.cfg (``$`` is refused only by the newer isoeditor, assisted-image-service@a55e383a)."""
    config = nodes_config(bootArtifactsBaseURL="http://127.0.0.1:8080/a$1b")
    run_, assets, _secrets = make_run(tmp_path, iso_cache, "external", config=config)
    assert execute(run_) == 0
    grub = _text(str(assets / "node.x86_64.iso"), "/EFI/redhat/grub.cfg", tmp_path)
    assert "'coreos.live.rootfs_url=http://127.0.0.1:8080/a/agent.x86_64-rootfs.img'" in grub
    assert "Upload it at http://127.0.0.1:8080/a$1b/agent.x86_64-rootfs.img" in run_.log_text()
