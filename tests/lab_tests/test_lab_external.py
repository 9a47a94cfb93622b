"""Platform External: node-joiner 4.17 writes a minimal node ISO that fetches the RHCOS stream's rootfs
(openshift/installer pkg/asset/agent/image/agentimage.go@e63803a3); from 4.18 the node ISO is a full one, as upstream's
own External add-nodes test needs (cmd/node-joiner/testdata/add-nodes-usermanagednetworking-external.txt@de45fedd).
The ISOs are read back with xorriso and compared with the base ISO's files."""

import json
import pathlib

import pytest
from iso_helpers import xorriso_extract, xorriso_ls
from lab import iso, nodeiso, seeds
from nj_helpers import execute, make_run, nodes_config, profile_of, read_report, replace

BASE_URL = "http://127.0.0.1:8080/rhcos"
STREAM_ROOTFS = (
    "https://rhcos.mirror.openshift.com/art/storage/prod/streams/4.17-9.4/builds/417.94.202502051822-0/x86_64/"
    "rhcos-417.94.202502051822-0-live-rootfs.x86_64.img"
)


def _text(image, inner, tmp_path):
    path = tmp_path / ("%s-%s" % (image.rsplit("/", 2)[-2], inner.strip("/").replace("/", "_")))
    with open(xorriso_extract(image, inner, str(path))) as handle:
        return handle.read()


@pytest.fixture(scope="module")
def minimal(tmp_path_factory, iso_cache):
    """node-joiner 4.17 on External, nodes-config with a bootArtifactsBaseURL (which 4.17 does not read)."""
    tmp_path = tmp_path_factory.mktemp("minimal")
    config = nodes_config(bootArtifactsBaseURL=BASE_URL)
    run_, assets, _secrets = make_run(tmp_path, iso_cache, "v417-external", config=config)
    assert run_.profile.name == "4.17" and execute(run_) == 0, run_.log_text()
    return run_, assets, tmp_path


def test_417_writes_a_minimal_iso_that_fetches_the_streams_rootfs(minimal, iso_cache):
    run_, assets, tmp_path = minimal
    image = str(assets / "node.x86_64.iso")
    assert not (assets / "boot-artifacts").exists()  # no rootfs beside the ISO, base URL or not
    assert "rootfs.img" not in xorriso_ls(image, "/images/pxeboot")
    placeholder = xorriso_extract(image, "/" + nodeiso.RAMDISK, str(tmp_path / "placeholder"))
    assert pathlib.Path(placeholder).read_bytes() == bytes(1024 * 1024)
    grub = _text(image, "/EFI/redhat/grub.cfg", tmp_path)
    linux = next(line for line in grub.splitlines() if line.strip().startswith("linux "))
    assert linux.endswith(" 'coreos.live.rootfs_url=%s'" % STREAM_ROOTFS) and "coreos.liveiso" not in grub
    assert BASE_URL not in grub
    initrd = next(line for line in grub.splitlines() if line.strip().startswith("initrd "))
    assert initrd.endswith("/images/ignition.img /images/assisted_installer_custom.img")
    isolinux = _text(image, "/isolinux/isolinux.cfg", tmp_path)
    append = next(line for line in isolinux.splitlines() if line.strip().startswith("append "))
    assert append.startswith("  append initrd=/images/pxeboot/initrd.img,/images/ignition.img,/images/assisted_")
    assert append.endswith(" coreos.live.rootfs_url=" + STREAM_ROOTFS) and "coreos.liveiso" not in isolinux
    # coreos/kargs.jso is the base ISO's: node-joiner renamed it before the minimal ISO edits looked for kargs.json
    base = iso.build_base_iso(iso_cache, 8 * 1024 * 1024, "x86_64")
    assert json.loads(_text(image, "/coreos/kargs.jso", tmp_path)) == json.loads(
        _text(base, "/coreos/kargs.json", tmp_path)
    )
    assert iso.read_embedded_ignition(image)["ignition"]["version"]  # the embedded config is as on any platform
    log = run_.log_text()
    assert "level=debug msg=Using default rootfs URL: " + STREAM_ROOTFS in log
    assert "msg=Generated minimal ISO at /assets/node.x86_64.iso The ISO is valid up to " in log
    assert "always make sure CCM manifests were added in the openshift directory" in log
    assert (assets / "exit_code").read_text() == "0" and not (assets / "report.json").exists()


def test_417_without_a_pxe_rootfs_in_the_stream_fails_as_getrootfsurl_does(tmp_path, iso_cache):
    def no_pxe(cm):
        stream = json.loads(cm["data"]["stream"])
        stream["architectures"]["x86_64"]["artifacts"]["metal"]["formats"].pop("pxe")
        return dict(cm, data={"stream": json.dumps(stream)})

    objects = replace(
        seeds.load_seed("v417-external"), "ConfigMap", "coreos-bootimages", no_pxe, "openshift-machine-config-operator"
    )
    run_, assets, _secrets = make_run(tmp_path, iso_cache, objects=objects, profile=profile_of("v417"))
    assert execute(run_) == 1 and (assets / "exit_code").read_text() == "1"
    assert (
        'failed to fetch Agent Installer ISO: failed to generate asset "Agent Installer ISO": no RootFSURL found for '
        "x86_64" in run_.log_text()
    )


@pytest.mark.parametrize("variant", ["external", "default"])
def test_from_418_the_node_iso_is_full_on_external_too(tmp_path, iso_cache, variant):
    config = nodes_config(bootArtifactsBaseURL=BASE_URL)
    run_, assets, _secrets = make_run(tmp_path, iso_cache, variant, config=config)
    assert run_.profile.name == "4.21" and execute(run_) == 0
    assert "rootfs.img" in xorriso_ls(str(assets / "node.x86_64.iso"), "/images/pxeboot")
    assert not (assets / "boot-artifacts").exists() and "minimal" not in run_.log_text()
    assert read_report(assets)["stages"][-1]["id"] == "generate-iso"


def test_pxe_on_external_writes_the_pxe_files(tmp_path, iso_cache):
    run_, assets, _secrets = make_run(
        tmp_path, iso_cache, "external", config=nodes_config(bootArtifactsBaseURL=BASE_URL)
    )
    assert execute(run_, pxe=True) == 0
    assert "node.x86_64-rootfs.img" in [p.name for p in (assets / "boot-artifacts").iterdir()]


def test_the_minimal_edits_expand_the_url_as_a_go_template(tmp_path):
    """The vendored isoeditor puts the URL into a ReplaceAllString template: ``$1b`` names no group and vanishes."""
    (tmp_path / "EFI/redhat").mkdir(parents=True)
    (tmp_path / "images/pxeboot").mkdir(parents=True)
    (tmp_path / "images/pxeboot/rootfs.img").write_bytes(b"r")
    (tmp_path / "EFI/redhat/grub.cfg").write_text("\tlinux /vmlinuz coreos.liveiso=x a\n\tinitrd /initrd.img\n")
    nodeiso.make_minimal(str(tmp_path), "http://h/a$1b/c$$d", "ppc64le")
    grub = (tmp_path / "EFI/redhat/grub.cfg").read_text()
    assert grub == "\tlinux /vmlinuz a 'coreos.live.rootfs_url=http://h/a/c$d'\n\tinitrd /initrd.img /%s\n" % (
        nodeiso.RAMDISK
    )
    assert not (tmp_path / "images/pxeboot/rootfs.img").exists()
