# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ISOs and PXE initrds laid out like node-joiner's (4.17-4.21), built with xorriso and the system cpio:
Rock Ridge, no Joliet, 3-character extensions, gzip cpio zero-padded; plus the base RHCOS layout, xz, and
primary-only / Joliet-only name records. Read back with _iso and _iso_info, checked against xorriso."""

import datetime
import importlib.util
import json
import os
import shutil
import subprocess

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._image import info as _iso_info
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import iso as _iso
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import iso9660 as _iso9660
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import iso_layout as _iso_layout
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.errors import (
    EmbedAreaError,
    IsoLayoutError,
)

_spec = importlib.util.spec_from_file_location(
    "node_iso_layout", os.path.join(os.path.dirname(__file__), "fixtures", "iso", "node_iso_layout.py")
)
layout = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layout)

NOW = datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)
HOSTS = [
    {"hostname": "extra-worker-0", "macs": ["52:54:00:6F:00:14"], "interfaces": ["eth0"]},
    {"hostname": "extra-worker-1", "macs": ["52:54:00:6f:00:15", "52:54:00:6f:00:16"]},
]
SERIAL = "console=ttyS0,115200n8"


@pytest.fixture(scope="module")
def tools():
    missing = layout.live.required_tools() + [t for t in ("cpio",) if shutil.which(t) is None]
    assert not missing, "setup must install %s (.ci/setup.sh)" % ", ".join(missing)


def build(tmp_path, ignition="default", **kwargs):
    if ignition == "default":
        ignition = layout.add_nodes_ignition(hosts=HOSTS)
    path = str(tmp_path / "node.x86_64.iso")
    layout.build_node_iso(str(tmp_path), path, ignition, **kwargs)
    return path


def xorriso_extract(iso, path, out):
    subprocess.run(
        ["xorriso", "-osirrox", "on", "-indev", iso, "-extract", path, str(out)],
        check=True,
        capture_output=True,
    )
    return out.read_bytes()


@pytest.fixture(scope="module")
def node_iso(tmp_path_factory, tools):
    return build(tmp_path_factory.mktemp("node"))


# --- node-joiner's layout ---------------------------------------------------------------------------


def test_the_fixture_has_node_joiners_names(node_iso):
    listing = subprocess.run(
        ["xorriso", "-indev", node_iso, "-find", "/coreos"], check=True, capture_output=True
    ).stdout.decode()
    assert "'/coreos/igninfo.jso'" in listing and "'/coreos/kargs.jso'" in listing and ".json" not in listing
    with open(node_iso, "rb") as handle:
        image = _iso9660.IsoImage(handle, node_iso)
        assert image.has_rock_ridge and not image.has_joliet
        assert [r.primary for r in image.listdir(image.find("coreos"))] == ["FEATURES.JSO", "IGNINFO.JSO", "KARGS.JSO"]


def test_inspect_reads_cluster_hosts_and_expiry(node_iso):
    info = _iso.inspect_iso(node_iso)
    summary = info["summary"]
    assert summary["cluster_id"] == "5c3d7b2e-0d1e-4f5a-9b8c-1a2b3c4d5e6f"
    assert [h["hostname"] for h in summary["hosts"]] == ["extra-worker-0", "extra-worker-1"]
    assert summary["hosts"][1]["mac_addresses"] == ["52:54:00:6f:00:15", "52:54:00:6f:00:16"]
    assert summary["token_expiry"] == "2031-02-03T04:05:06Z"
    assert info["iso_files"] == {"igninfo": "coreos/igninfo.jso", "kargs": "coreos/kargs.jso"}
    assert info["embed_area"]["compression"] == ["gzip"]
    assert info["kargs"] == layout.live.DEFAULT_KARGS


def test_layout_agrees_with_xorriso(node_iso, tmp_path):
    with open(node_iso, "rb") as handle:
        found = _iso.read_layout(handle, node_iso)
    area = xorriso_extract(node_iso, "/images/ignition.img", tmp_path / "ignition.img")
    with open(node_iso, "rb") as handle:
        handle.seek(found.embed_area.offset)
        assert handle.read(found.embed_area.length) == area
    assert area[:2] == b"\x1f\x8b" and area.endswith(b"\0" * 1024)


def test_iso_info_says_which_hosts_and_whether_it_still_works(node_iso):
    result = _iso_info.describe_image(node_iso, NOW, min_validity=24 * 3600)
    assert result["layout"] == "node-iso"
    assert (result["cluster_id"], result["cluster_name"], result["api_dns_name"]) == (
        "5c3d7b2e-0d1e-4f5a-9b8c-1a2b3c4d5e6f",
        "ostest",
        "api.ostest.example.com",
    )
    assert [h["hostname"] for h in result["hosts"]] == ["extra-worker-0", "extra-worker-1"]
    assert result["hosts"][0]["interfaces"] == [{"mac_address": "52:54:00:6f:00:14", "name": "eth0"}]
    assert result["valid"] is True and result["valid_for"] == pytest.approx(9556.08, abs=0.01)
    assert (result["architecture"], result["openshift_version"]) == ("x86_64", "4.21.3")
    assert result["kernel_arguments"] == layout.live.DEFAULT_KARGS
    assert "extra-worker-0, extra-worker-1" in result["message"] and "it works for at least 24h00m" in result["message"]
    text = json.dumps(result)
    assert layout.PULL_SECRET_MARKER not in text and layout.TOKEN_SIGNATURE not in text


def test_validity_window(node_iso):
    late = datetime.datetime(2031, 2, 2, 12, 0, tzinfo=datetime.timezone.utc)  # 16 hours before expiry
    result = _iso_info.describe_image(node_iso, late, min_validity=24 * 3600)
    assert result["valid"] is False and result["valid_for"] == pytest.approx(16.09, abs=0.01)
    assert "does NOT work for at least 24h00m" in result["message"]
    assert _iso_info.describe_image(node_iso, late)["valid"] is True
    expired = _iso_info.describe_image(node_iso, datetime.datetime(2032, 1, 1, tzinfo=datetime.timezone.utc))
    assert expired["valid"] is False and expired["valid_for"] < 0 and "token expired at" in expired["message"]


def test_4_17_expiry_variable(tmp_path, tools):
    iso = build(
        tmp_path,
        layout.add_nodes_ignition(
            hosts=HOSTS, expiry_variable="AGENT_AUTH_TOKEN_EXPIRY", expiry="2030-01-02T00:00:00Z", version="4.17.20"
        ),
    )
    result = _iso_info.describe_image(iso, NOW)
    assert result["token_expiry"] == "2030-01-02T00:00:00Z" and result["valid_for"] == 24.0
    assert result["token_expiry_source"].endswith("AGENT_AUTH_TOKEN_EXPIRY")
    assert result["openshift_version"] == "4.17.20"


@pytest.mark.parametrize("compression", ["xz", "none"])
def test_xz_and_plain_cpio_still_read(tmp_path, tools, compression):
    iso = build(tmp_path, compression=compression)
    info = _iso.inspect_iso(iso)
    assert info["embed_area"]["compression"] == [compression]
    assert info["summary"]["cluster_name"] == "ostest"


# --- kernel arguments on a node-joiner ISO, without rebuilding it -----------------------------------


def test_kargs_edit_on_jso_layout(node_iso, tmp_path):
    out = str(tmp_path / "edited.iso")
    shutil.copyfile(node_iso, out)
    os.chmod(out, 0o600)
    assert _iso.append_kernel_arguments(out, SERIAL) is True
    assert _iso.inspect_iso(out)["kargs"] == layout.live.DEFAULT_KARGS + " " + SERIAL
    grub = xorriso_extract(out, "/EFI/redhat/grub.cfg", tmp_path / "grub.cfg").decode()
    assert grub.startswith(layout.live.GRUB_PREFIX + layout.live.DEFAULT_KARGS + " " + SERIAL + "\n#")
    # the embedded config and the .jso files are untouched
    assert _iso.inspect_iso(out)["summary"] == _iso.inspect_iso(node_iso)["summary"]
    edited = xorriso_extract(out, "/coreos/kargs.jso", tmp_path / "k")
    assert edited == xorriso_extract(node_iso, "/coreos/kargs.jso", tmp_path / "k0")
    with open(node_iso, "rb") as handle:
        original = bytearray(handle.read())
    with open(out, "rb") as handle:
        edited = bytearray(handle.read())
    assert len(original) == len(edited)
    with open(node_iso, "rb") as handle:
        regions = _iso_layout.read_layout(handle, node_iso).kargs.regions
    assert [region.path for region in regions] == ["isolinux/isolinux.cfg", "EFI/redhat/grub.cfg"]
    for region in regions:  # every byte outside the two kargs areas is the same
        span = slice(region.offset, region.offset + region.length)
        original[span] = edited[span] = b"\0" * region.length
    assert original == edited
    assert _iso.append_kernel_arguments(out, SERIAL) is False


# --- other layouts --------------------------------------------------------------------------------


def test_base_rhcos_layout_with_json_names_and_no_config(tmp_path, tools):
    iso = build(tmp_path, ignition=None, truncate_names=False)
    info = _iso.inspect_iso(iso)
    assert info["ignition"] is None and info["iso_files"]["igninfo"] == "coreos/igninfo.json"
    result = _iso_info.describe_image(iso, NOW)
    assert result["layout"] == "base-iso" and result["hosts"] == [] and result["valid"] is False
    assert (result["architecture"], result["architecture_source"]) == ("x86_64", "boot layout")
    assert "without an embedded config" in result["message"]


@pytest.mark.parametrize(
    "records",
    [
        {"rock_ridge": False, "iso_level": 1},
        {"rock_ridge": False, "joliet": True},
        {"rock_ridge": True, "joliet": True, "truncate_names": False},
    ],
    ids=["primary-level1-only", "joliet-only", "rock-ridge-and-joliet-json"],
)
def test_every_kind_of_name_record_is_read(tmp_path, tools, records):
    iso = build(tmp_path, **records)
    info = _iso.inspect_iso(iso)
    assert info["summary"]["cluster_id"] == "5c3d7b2e-0d1e-4f5a-9b8c-1a2b3c4d5e6f"
    assert info["kargs"] == layout.live.DEFAULT_KARGS
    _iso.append_kernel_arguments(iso, SERIAL)
    assert _iso.inspect_iso(iso)["kargs"].endswith(SERIAL)


def test_primary_level1_path_lookup(tmp_path, tools):
    iso = build(tmp_path, rock_ridge=False, iso_level=1)
    with open(iso, "rb") as handle:
        image = _iso9660.IsoImage(handle, iso)
        assert not image.has_rock_ridge and not image.has_joliet
        region = image.file_region("/COREOS/IGNINFO.JSO;1")
        assert region == image.file_region("coreos/igninfo.json") == image.file_region("coreos/igninfo.jso")
        assert json.loads(image.read(region.offset, region.length, "igninfo"))["file"] == "images/ignition.img"
        assert image.stored_name("coreos/kargs.json") == "COREOS/KARGS.JSO"
        assert image.file_region("coreos/missing.json") is None


# --- the PXE initrd ---------------------------------------------------------------------------------


@pytest.mark.parametrize("compression", ["gzip", "xz"])
def test_pxe_initrd(tmp_path, tools, compression):
    path = str(tmp_path / "node.x86_64-initrd.img")
    layout.pxe_initrd(path, layout.add_nodes_ignition(hosts=HOSTS, expiry_variable="AUTH_TOKEN_EXPIRY"), compression)
    result = _iso_info.describe_image(path, NOW)
    assert result["layout"] == "pxe-initrd" and result["compression"] == [compression]
    assert [h["hostname"] for h in result["hosts"]] == ["extra-worker-0", "extra-worker-1"]
    assert result["cluster_id"] == "5c3d7b2e-0d1e-4f5a-9b8c-1a2b3c4d5e6f" and result["valid"] is True
    assert result["kernel_arguments"] is None and result["architecture"] == "x86_64"


# --- what is not a node image fails clearly --------------------------------------------------------


def test_garbage_fails_naming_the_file(tmp_path):
    path = tmp_path / "random.bin"
    path.write_bytes(os.urandom(100000))
    with pytest.raises(IsoLayoutError, match=r"is neither an ISO 9660 image .* nor an initrd") as info:
        _iso_info.describe_image(str(path), NOW)
    assert str(path) in str(info.value) and "node.<arch>.iso" in str(info.value)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(IsoLayoutError, match="cannot read it"):
        _iso_info.describe_image(str(tmp_path / "nope.iso"), NOW)
    with pytest.raises(IsoLayoutError, match="is a directory"):
        _iso_info.describe_image(str(tmp_path), NOW)


def test_iso_without_igninfo(tmp_path, tools):
    tree = tmp_path / "tree"
    (tree / "docs").mkdir(parents=True)
    (tree / "docs" / "readme.txt").write_text("not coreos")
    iso = str(tmp_path / "plain.iso")
    subprocess.run(
        ["xorriso", "-outdev", iso, "-map", str(tree), "/", "-commit"],
        check=True,
        capture_output=True,
    )
    with pytest.raises(IsoLayoutError, match=r"coreos/igninfo.json \(igninfo.jso in a node-joiner ISO\) not found"):
        _iso_info.describe_image(iso, NOW)


def test_corrupt_embed_area(tmp_path, tools):
    iso = build(tmp_path)
    with open(iso, "rb") as handle:
        area = _iso.read_layout(handle, iso).embed_area
    with open(iso, "r+b") as handle:
        handle.seek(area.offset + 30)
        handle.write(b"\xff" * 16)
    with pytest.raises(EmbedAreaError, match="corrupt gzip stream") as info:
        _iso_info.describe_image(iso, NOW)
    assert iso in str(info.value) and "images/ignition.img" in str(info.value)


def test_config_that_is_not_an_add_nodes_one(tmp_path, tools):
    iso = build(tmp_path, ignition={"ignition": {"version": "3.2.0"}})
    with pytest.raises(IsoLayoutError, match=r"without /etc/assisted/add-nodes\.env: not an add-nodes image"):
        _iso_info.describe_image(iso, NOW)


def test_initrd_without_ignition(tmp_path, tools):
    path = tmp_path / "initrd.img"
    path.write_bytes(layout.cpio_archive({"etc/initrd-release": b"x"}))
    with pytest.raises(IsoLayoutError, match=r"no Ignition archive .* appended at the end of this initrd"):
        _iso_info.describe_image(str(path), NOW)


def test_joliet_names_are_used_when_the_primary_ones_are_mangled(tmp_path, tools):
    tree = tmp_path / "tree"
    (tree / "Boot-Files").mkdir(parents=True)
    (tree / "Boot-Files" / "a-long-file-name.config").write_text("joliet")
    iso = str(tmp_path / "joliet.iso")
    subprocess.run(
        [
            "xorriso",
            "-rockridge",
            "off",
            "-joliet",
            "on",
            "-compliance",
            "iso_9660_level=1",
            "-outdev",
            iso,
            "-map",
            str(tree),
            "/",
            "-commit",
        ],
        check=True,
        capture_output=True,
    )
    with open(iso, "rb") as handle:
        image = _iso9660.IsoImage(handle, iso)
        assert image.has_joliet and not image.has_rock_ridge
        region = image.file_region("Boot-Files/a-long-file-name.config")
        assert image.read(region.offset, region.length, "file") == b"joliet"
        assert image.stored_name("Boot-Files/a-long-file-name.config") == "Boot-Files/a-long-file-name.config"
