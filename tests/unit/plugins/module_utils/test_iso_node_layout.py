# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node images laid out as node-joiner (4.17-4.21) writes them: the ISO rebuilt by go-diskfs (Rock Ridge, no
Joliet, its record order, path tables, PX serials, El Torito catalog; fixtures/iso/go_diskfs_writer.py), the names
cut to 3-character extensions, a gzip cpio zero-padded; the base RHCOS layout, xz, xorriso-written variants
(primary-only, Joliet-only); the PXE initrd. Read back with _image.iso, checked against xorriso."""

import datetime
import gzip
import importlib.util
import json
import os
import shutil
import struct
import subprocess

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._image import iso as _iso
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.ignition import (
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
CLUSTER_ID = "5c3d7b2e-0d1e-4f5a-9b8c-1a2b3c4d5e6f"


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


def describe(path, min_validity="0", now=NOW):
    return _iso.iso_info(path, min_validity, now=now)


def xorriso_extract(iso, path, out):
    subprocess.run(
        ["xorriso", "-osirrox", "on", "-indev", iso, "-extract", path, str(out)], check=True, capture_output=True
    )
    return out.read_bytes()


def raw_records(iso, directory_sector, length):
    """``[(ISO 9660 identifier, system use bytes)]`` of a directory, read here byte by byte (not by _image.iso)."""
    with open(iso, "rb") as handle:
        handle.seek(directory_sector * 2048)
        data = handle.read(length)
    records, pos = [], 0
    while pos < len(data):
        if data[pos] == 0:
            pos = (pos // 2048 + 1) * 2048
            continue
        record = data[pos : pos + data[pos]]
        name_length = record[32]
        records.append((record[33 : 33 + name_length], record[33 + name_length + (1 - name_length % 2) :]))
        pos += data[pos]
    return records


@pytest.fixture(scope="module")
def node_iso(tmp_path_factory, tools):
    return build(tmp_path_factory.mktemp("node"))


# --- the fixture is laid out as go-diskfs writes it -------------------------------------------------------------


def test_the_fixture_is_go_diskfs_shaped(node_iso):
    with open(node_iso, "rb") as handle:
        head = handle.read(20 * 2048)
    assert head[: 16 * 2048] == bytes(16 * 2048)  # no hybrid MBR, no GPT
    assert [head[sector * 2048 : sector * 2048 + 6] for sector in (16, 17, 18)] == [
        b"\x01CD001",
        b"\x00CD001",
        b"\xffCD001",
    ]
    assert head[16 * 2048 + 40 : 16 * 2048 + 72] == layout.VOLUME_ID.encode().ljust(32, b"\0")  # NUL-padded
    root_sector, root_length = (
        struct.unpack_from("<I", head, 16 * 2048 + 158)[0],
        struct.unpack_from("<I", head, 16 * 2048 + 166)[0],
    )
    assert root_sector == 19 and root_length % 2048  # after PVD, boot record, terminator; not a whole sector
    root = raw_records(node_iso, root_sector, root_length)
    # "." starts SP, PX, TF, then a CE: its ER went to a continuation sector
    assert root[0][0] == b"\0" and root[0][1][:2] == b"SP" and root[0][1][7:9] == b"PX" and b"CE" in root[0][1][77:79]
    # record order is the tree's (lexical by the real name), not the ISO 9660 order (COREOS would come first)
    assert [name for name, _su in root[2:]] == [b"EFI", b"COREOS", b"IMAGES", b"ISOLINUX"]
    coreos = next(su for name, su in root if name == b"COREOS")
    px = coreos[coreos.index(b"PX") :]
    # the file serial (walk order: / 0, EFI 1, EFI/redhat 2, its grub.cfg 3, coreos 4) as one little-endian uint64
    assert struct.unpack_from("<II", px, 36) == (4, 0)
    listing = subprocess.run(
        ["xorriso", "-indev", node_iso, "-find", "/", "-exec", "lsdl"], check=True, capture_output=True
    )
    assert b"collision" in listing.stderr and b"/isolinux/boot___.cat" in listing.stdout  # two BOOT.CAT;1 records
    assert b"'/coreos/igninfo.jso'" in listing.stdout and b".json" not in listing.stdout
    report = subprocess.run(
        ["xorriso", "-indev", node_iso, "-report_el_torito", "plain"], check=True, capture_output=True
    )
    assert b"El Torito boot img :   1  BIOS" in report.stdout and b"boot-info-table" in report.stdout
    assert b"El Torito boot img :   2  UEFI" in report.stdout


def test_primary_names_as_go_diskfs_writes_them(node_iso):
    with open(node_iso, "rb") as handle:
        image = _iso.IsoImage(handle, node_iso)
        assert image.rock_ridge and not image.joliet and image.volume_id == layout.VOLUME_ID
        primaries = [r.primary for r in image.listdir(image.find("coreos")[0])]
        assert primaries == ["FEATURES.JSO", "IGNINFO.JSO", "KARGS.JSO"]
        names = [(r.name, r.primary) for r in image.listdir(image.find("isolinux")[0])]
        assert names[0] == ("boot.cat", "BOOT.CAT") and names[-1] == ("boot.cat", "BOOT.CAT")
        assert image.read("/ISOLINUX/BOOT.CAT;1")[:2] == b"\x01\0"  # the first record: the extracted file


# --- node-joiner's layout read back ------------------------------------------------------------------------------


def test_inspect_reads_cluster_hosts_and_expiry(node_iso):
    info = _iso.inspect_iso(node_iso)
    summary = info["summary"]
    assert summary["cluster_id"] == CLUSTER_ID
    assert [h["hostname"] for h in summary["hosts"]] == ["extra-worker-0", "extra-worker-1"]
    assert summary["hosts"][1]["mac_addresses"] == ["52:54:00:6f:00:15", "52:54:00:6f:00:16"]
    assert summary["token_expiry"] == "2031-02-03T04:05:06Z"
    assert info["iso_files"] == {"igninfo": "coreos/igninfo.jso", "kargs": "coreos/kargs.jso"}
    assert info["embed_area"]["compression"] == ["gzip"]
    assert info["kargs"] == info["kargs_default"] == layout.live.DEFAULT_KARGS
    assert (info["volume_id"], info["boot_architecture"]) == (layout.VOLUME_ID, "x86_64")


def test_layout_agrees_with_xorriso(node_iso, tmp_path):
    with open(node_iso, "rb") as handle:
        offset, length = _iso.read_layout(handle, node_iso).embed_area
    area = xorriso_extract(node_iso, "/images/ignition.img", tmp_path / "ignition.img")
    with open(node_iso, "rb") as handle:
        handle.seek(offset)
        assert handle.read(length) == area
    assert area[:2] == b"\x1f\x8b" and area.endswith(b"\0" * 1024)


def test_iso_info_says_which_hosts_and_whether_it_still_works(node_iso):
    result = describe(node_iso, "24h")
    assert result["layout"] == "node-iso" and result["changed"] is False
    assert (result["cluster_id"], result["cluster_name"], result["api_dns_name"]) == (
        CLUSTER_ID,
        "ostest",
        "api.ostest.example.com",
    )
    assert [h["hostname"] for h in result["hosts"]] == ["extra-worker-0", "extra-worker-1"]
    assert result["hosts"][0]["interfaces"] == [{"mac_address": "52:54:00:6f:00:14", "name": "eth0"}]
    assert result["valid"] is True and result["valid_for"] == pytest.approx(9556.08, abs=0.01)
    assert (result["architecture"], result["openshift_version"]) == ("x86_64", "4.21.3")
    assert result["kernel_arguments"] == layout.live.DEFAULT_KARGS and result["volume_id"] == layout.VOLUME_ID
    assert "extra-worker-0, extra-worker-1" in result["message"] and "it works for at least 24h00m" in result["message"]
    text = json.dumps(result)
    assert layout.PULL_SECRET_MARKER not in text and layout.TOKEN_SIGNATURE not in text


def test_validity_window(node_iso):
    late = datetime.datetime(2031, 2, 2, 12, 0, tzinfo=datetime.timezone.utc)  # 16 hours before expiry
    result = describe(node_iso, 24 * 3600, late)
    assert result["valid"] is False and result["valid_for"] == pytest.approx(16.09, abs=0.01)
    assert "does NOT work for at least 24h00m" in result["message"] and result["min_validity"] == 24.0
    assert describe(node_iso, now=late)["valid"] is True
    expired = describe(node_iso, now=datetime.datetime(2032, 1, 1, tzinfo=datetime.timezone.utc))
    assert expired["valid"] is False and expired["valid_for"] < 0 and "token expired at" in expired["message"]


def test_4_17_expiry_variable(tmp_path, tools):
    ignition = layout.add_nodes_ignition(
        hosts=HOSTS, expiry_variable="AGENT_AUTH_TOKEN_EXPIRY", expiry="2030-01-02T00:00:00Z", version="4.17.20"
    )
    result = describe(build(tmp_path, ignition))
    assert result["token_expiry"] == "2030-01-02T00:00:00Z" and result["valid_for"] == 24.0
    assert result["token_expiry_source"].endswith("AGENT_AUTH_TOKEN_EXPIRY")
    assert result["openshift_version"] == "4.17.20"


@pytest.mark.parametrize("compression", ["xz", "none"])
def test_xz_and_plain_cpio_still_read(tmp_path, tools, compression):
    info = _iso.inspect_iso(build(tmp_path, compression=compression))
    assert info["embed_area"]["compression"] == [compression]
    assert info["summary"]["cluster_name"] == "ostest"


@pytest.mark.parametrize(
    "variant",
    [{"efi_only": True}, {"short_names": True}, {"efi_only": True, "short_names": True}],
    ids=["aarch64-efi-only", "go-diskfs-8.3-names", "both"],
)
def test_other_go_diskfs_layouts(tmp_path, tools, variant):
    # aarch64: no isolinux, the catalog hidden (no directory record); go-diskfs 58541aa8f559 cuts ISO names to 8.3
    extra = {"images/pxeboot/vmlinuz": b"\0" * 0x38 + b"ARMd" + b"\0" * 64} if variant.get("efi_only") else {}
    iso = build(tmp_path, extra=extra, **variant)
    info = _iso.inspect_iso(iso)
    assert info["summary"]["cluster_id"] == CLUSTER_ID and info["kargs"] == layout.live.DEFAULT_KARGS
    assert info["iso_files"] == {"igninfo": "coreos/igninfo.jso", "kargs": "coreos/kargs.jso"}
    assert info["boot_architecture"] == ("aarch64" if extra else "x86_64")
    assert _iso.append_kernel_arguments(iso, SERIAL) is True and _iso.inspect_iso(iso)["kargs"].endswith(SERIAL)
    if variant.get("efi_only"):  # the El Torito catalog has no record; boot.catalog is the base ISO's, extracted
        with open(iso, "rb") as handle:
            handle.seek(17 * 2048 + 0x47)
            catalog = struct.unpack("<I", handle.read(4))[0] * 2048
            image = _iso.IsoImage(handle, iso)
            assert image.exists("boot.catalog") and image.extent("boot.catalog")[0] != catalog
            assert not image.exists("isolinux")


def test_the_config_iso_as_go_diskfs_writes_it(tmp_path):
    # node-joiner --config-iso: isoeditor.Create with volume agent_configimage and one file, config.gz --
    # openshift/installer pkg/asset/agent/configimage/configiso.go@386d4aafb939cb7e5e22f77feef48386c731d2e1
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "config.gz").write_bytes(gzip.compress(b"cpio"))
    iso = str(tmp_path / "agentconfig.noarch.iso")
    layout.go_diskfs.write_iso(str(tree), iso, "agent_configimage")
    with open(iso, "rb") as handle:
        image = _iso.IsoImage(handle, iso)
        assert image.volume_id == "agent_configimage"  # the NUL padding is not part of it
        assert (
            image.exists("config.gz")
            and image.find("CONFIG.GZ;1")[1] == "CONFIG.GZ"
            and image.find("config.gz")[1] == "config.gz"
        )
        assert gzip.decompress(image.read("config.gz")) == b"cpio"


# --- kernel arguments on a node-joiner ISO, without rebuilding it -----------------------------------------------


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
        regions = _iso.read_layout(handle, node_iso).regions
    assert [region.path for region in regions] == ["isolinux/isolinux.cfg", "EFI/redhat/grub.cfg"]
    for region in regions:  # every byte outside the two kargs areas is the same
        span = slice(region.offset, region.offset + region.length)
        original[span] = edited[span] = b"\0" * region.length
    assert original == edited
    assert _iso.append_kernel_arguments(out, SERIAL) is False


# --- other layouts ----------------------------------------------------------------------------------------------


def test_base_rhcos_layout_with_json_names_and_no_config(tmp_path, tools):
    iso = build(tmp_path, ignition=None, truncate_names=False, writer="xorriso")
    info = _iso.inspect_iso(iso)
    assert info["ignition"] is None and info["iso_files"]["igninfo"] == "coreos/igninfo.json"
    result = describe(iso)
    assert result["layout"] == "base-iso" and result["hosts"] == [] and result["valid"] is False
    assert result["valid_for"] is None and result["compression"] is None
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
    iso = build(tmp_path, writer="xorriso", **records)
    info = _iso.inspect_iso(iso)
    assert info["summary"]["cluster_id"] == CLUSTER_ID
    assert info["kargs"] == layout.live.DEFAULT_KARGS
    _iso.append_kernel_arguments(iso, SERIAL)
    assert _iso.inspect_iso(iso)["kargs"].endswith(SERIAL)


def test_primary_level1_path_lookup(tmp_path, tools):
    iso = build(tmp_path, writer="xorriso", rock_ridge=False, iso_level=1)
    with open(iso, "rb") as handle:
        image = _iso.IsoImage(handle, iso)
        assert not image.rock_ridge and not image.joliet
        extent = image.extent("/COREOS/IGNINFO.JSO;1")
        assert extent == image.extent("coreos/igninfo.json") == image.extent("coreos/igninfo.jso")
        assert json.loads(image.read("coreos/igninfo.json"))["file"] == "images/ignition.img"
        assert image.find("coreos/kargs.json")[1] == "COREOS/KARGS.JSO"
        assert image.extent("coreos/missing.json") is None and image.read("coreos/missing.json") is None
        with pytest.raises(IsoLayoutError, match="coreos is a directory, expected a file"):
            image.extent("coreos")


# --- the PXE initrd ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("compression", ["gzip", "xz"])
def test_pxe_initrd(tmp_path, tools, compression):
    path = str(tmp_path / "node.x86_64-initrd.img")
    layout.pxe_initrd(path, layout.add_nodes_ignition(hosts=HOSTS, expiry_variable="AUTH_TOKEN_EXPIRY"), compression)
    result = describe(path)
    assert result["layout"] == "pxe-initrd" and result["compression"] == [compression]
    assert [h["hostname"] for h in result["hosts"]] == ["extra-worker-0", "extra-worker-1"]
    assert result["cluster_id"] == CLUSTER_ID and result["valid"] is True
    assert result["kernel_arguments"] is None and result["architecture"] == "x86_64"
    assert result["iso_files"] is None and result["volume_id"] is None


def test_pxe_initrd_architecture_from_its_file_name(tmp_path, tools):
    config = layout.add_nodes_ignition(hosts=HOSTS)
    config["storage"]["files"] = [f for f in config["storage"]["files"] if "infraenv" not in f["path"]]
    config["storage"]["files"] = [f for f in config["storage"]["files"] if "images.env" not in f["path"]]
    path = str(tmp_path / "node.aarch64-initrd.img")
    layout.pxe_initrd(path, config)
    assert (describe(path)["architecture"], describe(path)["architecture_source"]) == ("aarch64", "file name")


# --- what is not a node image fails clearly ---------------------------------------------------------------------


def test_garbage_fails_naming_the_file(tmp_path):
    path = tmp_path / "random.bin"
    path.write_bytes(os.urandom(100000))
    with pytest.raises(IsoLayoutError, match=r"is neither an ISO 9660 image .* nor an initrd") as info:
        describe(str(path))
    assert str(path) in str(info.value) and "node.<arch>.iso" in str(info.value)
    assert info.value.result == {"file": str(path)}


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(IsoLayoutError, match="cannot read it") as info:
        describe(str(tmp_path / "nope.iso"))
    assert info.value.result == {"file": str(tmp_path / "nope.iso")}
    with pytest.raises(IsoLayoutError, match=r"cannot read it \(Is a directory\); expected a node ISO"):
        describe(str(tmp_path))


def test_iso_without_igninfo(tmp_path, tools):
    tree = tmp_path / "tree"
    (tree / "docs").mkdir(parents=True)
    (tree / "docs" / "readme.txt").write_text("not coreos")
    iso = str(tmp_path / "plain.iso")
    subprocess.run(["xorriso", "-outdev", iso, "-map", str(tree), "/", "-commit"], check=True, capture_output=True)
    with pytest.raises(IsoLayoutError, match=r"coreos/igninfo.json \(igninfo.jso in a node-joiner ISO\) not found"):
        describe(iso)


def test_corrupt_embed_area(tmp_path, tools):
    iso = build(tmp_path)
    with open(iso, "rb") as handle:
        offset, _length = _iso.read_layout(handle, iso).embed_area
    with open(iso, "r+b") as handle:
        handle.seek(offset + 30)
        handle.write(b"\xff" * 16)
    with pytest.raises(EmbedAreaError, match="corrupt gzip stream") as info:
        describe(iso)
    assert iso in str(info.value) and "images/ignition.img" in str(info.value)


def test_config_that_is_not_an_add_nodes_one(tmp_path, tools):
    iso = build(tmp_path, ignition={"ignition": {"version": "3.2.0"}})
    with pytest.raises(IsoLayoutError, match=r"without /etc/assisted/add-nodes\.env: not an add-nodes image"):
        describe(iso)


def test_initrd_without_ignition(tmp_path, tools):
    path = tmp_path / "initrd.img"
    path.write_bytes(layout.cpio_archive({"etc/initrd-release": b"x"}))
    with pytest.raises(IsoLayoutError, match=r"no Ignition archive .* appended at the end of this initrd"):
        describe(str(path))


def test_bad_min_validity_names_the_file(node_iso):
    with pytest.raises(Exception, match="min_validity: 'one day' is not a duration") as info:
        describe(node_iso, "one day")
    assert info.value.result == {"file": node_iso}


def test_joliet_names_are_used_when_the_primary_ones_are_mangled(tmp_path, tools):
    tree = tmp_path / "tree"
    (tree / "Boot-Files").mkdir(parents=True)
    (tree / "Boot-Files" / "a-long-file-name.config").write_text("joliet")
    iso = str(tmp_path / "joliet.iso")
    command = ["xorriso", "-rockridge", "off", "-joliet", "on", "-compliance", "iso_9660_level=1"]
    subprocess.run([*command, "-outdev", iso, "-map", str(tree), "/", "-commit"], check=True, capture_output=True)
    with open(iso, "rb") as handle:
        image = _iso.IsoImage(handle, iso)
        assert image.joliet and not image.rock_ridge
        assert image.read("Boot-Files/a-long-file-name.config") == b"joliet"
        assert image.find("Boot-Files/a-long-file-name.config")[1] == "Boot-Files/a-long-file-name.config"
