"""The lab's base ISOs and the node ISOs node-joiner writes, checked with xorriso, gzip and GNU cpio.

Reading an ISO back, PXE artifacts, the config ISO and cpio are in test_lab_boot_artifacts.py."""

import concurrent.futures
import gzip
import json
import os
import re
import shutil

import pytest
from iso_helpers import CONFIG, SIZE, el_torito, gzip_member, run, xorriso_extract, xorriso_ls
from lab import iso, isobase, nodeiso


@pytest.fixture(scope="module")
def node_iso(base_iso, tmp_path_factory):
    dest = str(tmp_path_factory.mktemp("node") / "node.x86_64.iso")
    return nodeiso.build_node_iso(base_iso, dest, CONFIG, " fips=1")


def has_joliet(image):
    with open(image, "rb") as f:
        f.seek(17 * iso.SECTOR)
        descriptors = [f.read(iso.SECTOR) for _index in range(4)]
    return any(d[0] == 2 and d[88:91] in (b"%/@", b"%/C", b"%/E") for d in descriptors)


def mbr_signature(image):
    with open(image, "rb") as f:
        return f.read(512)[510:512]


# --------------------------------------------------------------------------- the base (RHCOS) layout


def test_base_iso_has_requested_size(base_iso):
    assert os.path.getsize(base_iso) == SIZE


def test_base_el_torito_has_bios_and_uefi_entries_and_isohybrid(base_iso):
    report, platforms = el_torito(base_iso)
    assert "/isolinux/isolinux.bin" in report and "/images/efiboot.img" in report
    assert platforms == ["BIOS", "UEFI"]
    with open(base_iso, "rb") as f:
        head = f.read(1024)
    assert head[510:512] == b"\x55\xaa" and head[512:520] == b"EFI PART"
    with open(isobase.ISOHYBRID_MBR, "rb") as f:
        assert head[:432] == f.read(432)


def test_base_names_rock_ridge_json_primary_truncated_and_joliet(base_iso):
    assert xorriso_ls(base_iso, "/coreos") == ["features.json", "igninfo.json", "kargs.json"]
    primary = {name: rr for name, rr, _dir in iso.list_dir(base_iso, "/coreos")}
    assert primary == {"FEATURES.JSO": "features.json", "IGNINFO.JSO": "igninfo.json", "KARGS.JSO": "kargs.json"}
    assert has_joliet(base_iso)
    assert iso.volume_id(base_iso) == iso.VOLUME_ID


def test_live_layout_files(base_iso, tmp_path):
    assert json.loads(iso.read_file(base_iso, "coreos/igninfo.json")) == {"file": "images/ignition.img"}
    assert iso.read_file(base_iso, "COREOS/IGNINFO.JSO", primary=True) == iso.read_file(base_iso, "coreos/igninfo.json")
    area = xorriso_extract(base_iso, "/images/ignition.img", str(tmp_path / "ign.img"))
    with open(area, "rb") as f:
        data = f.read()
    assert len(data) == 256 * 1024 and not data.strip(b"\0")
    for path in (
        "coreos/features.json",
        "isolinux/isolinux.cfg",
        "EFI/redhat/grub.cfg",
        "images/pxeboot/vmlinuz",
        "images/pxeboot/initrd.img",
        "images/pxeboot/rootfs.img",
    ):
        assert iso.locate_file(base_iso, path) is not None, path
    assert iso.locate_file(base_iso, "images/missing.img") is None
    assert iso.read_embedded_ignition(base_iso) is None


def test_kargs_areas_at_declared_offsets(base_iso, tmp_path):
    spec = json.loads(iso.read_file(base_iso, "coreos/kargs.json"))
    assert spec["size"] == 1100
    assert spec["default"] == "coreos.liveiso=%s ignition.firstboot ignition.platform.id=metal" % iso.VOLUME_ID
    assert sorted(e["path"] for e in spec["files"]) == ["EFI/redhat/grub.cfg", "isolinux/isolinux.cfg"]
    for entry in spec["files"]:
        # Read with xorriso, not with the lab's reader, to check the offsets independently.
        cfg = xorriso_extract(base_iso, "/" + entry["path"], str(tmp_path / os.path.basename(entry["path"])))
        with open(cfg, "rb") as f:
            content = f.read()
        region = content[entry["offset"] : entry["offset"] + spec["size"]]
        expected = spec["default"] + entry.get("end", "\n")
        assert region.decode() == expected + "#" * (spec["size"] - len(expected))
    assert set(iso.read_kargs(base_iso).values()) == {spec["default"]}


def test_reader_offsets_match_xorriso(base_iso, tmp_path):
    for inner in ("coreos/kargs.json", "isolinux/isolinux.cfg", "images/pxeboot/initrd.img"):
        extracted = xorriso_extract(base_iso, "/" + inner, str(tmp_path / "x"))
        with open(extracted, "rb") as f:
            assert iso.read_file(base_iso, inner) == f.read(), inner
        os.unlink(extracted)


def test_build_is_cached(iso_cache, base_iso):
    before = os.stat(base_iso).st_mtime_ns
    assert iso.build_base_iso(iso_cache, SIZE) == base_iso
    assert os.stat(base_iso).st_mtime_ns == before


def test_concurrent_builders_share_one_image(tmp_path):
    cache = str(tmp_path / "c")
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        paths = list(pool.map(lambda _: iso.build_base_iso(cache, 8 * 1024 * 1024), range(4)))
    assert len(set(paths)) == 1
    assert sorted(n for n in os.listdir(cache) if n.endswith(".iso")) == [os.path.basename(paths[0])]


@pytest.mark.parametrize(
    "arch, platforms, kargs_files, extra",
    [
        ("aarch64", ["UEFI"], ["EFI/redhat/grub.cfg"], ["boot.catalog"]),
        ("s390x", ["BIOS"], ["images/cdboot.prm"], ["generic.ins", "images/initrd.addrsize", "images/cdboot.img"]),
        ("ppc64le", [], ["boot/grub/grub.cfg"], []),
    ],
)
def test_other_architectures_have_their_layout(iso_cache, arch, platforms, kargs_files, extra):
    image = iso.build_base_iso(iso_cache, 8 * 1024 * 1024, arch)
    assert el_torito(image)[1] == platforms if platforms else "El Torito" not in el_torito(image)[0]
    assert [e["path"] for e in json.loads(iso.read_file(image, "coreos/kargs.json"))["files"]] == kargs_files
    for path in extra:
        assert iso.locate_file(image, path) is not None, path


def test_unknown_arch_is_refused(iso_cache):
    with pytest.raises(ValueError, match="unknown architecture"):
        iso.build_base_iso(iso_cache, SIZE, "mips")


def test_one_gib_build_and_node_iso(tmp_path):
    image = iso.build_base_iso(str(tmp_path), 1024**3)
    try:
        assert os.path.getsize(image) == 1024**3
        node = nodeiso.build_node_iso(image, str(tmp_path / "node.x86_64.iso"), CONFIG)
        assert iso.read_embedded_ignition(node) == CONFIG
        assert abs(os.path.getsize(node) - os.path.getsize(image)) < 8 * 1024 * 1024
    finally:
        shutil.rmtree(str(tmp_path), ignore_errors=True)


# --------------------------------------------------------------------------- the node ISO node-joiner writes


def test_node_iso_names_are_cut_to_three_character_extensions(node_iso):
    listing = xorriso_ls(node_iso, "/coreos")
    assert listing == ["features.jso", "igninfo.jso", "kargs.jso"]
    assert not [name for name in listing if name.endswith(".json")]
    primary = {name: rr for name, rr, _dir in iso.list_dir(node_iso, "/coreos")}
    assert primary == {"FEATURES.JSO": "features.jso", "IGNINFO.JSO": "igninfo.jso", "KARGS.JSO": "kargs.jso"}
    # other names keep their (short) extensions
    assert iso.locate_file(node_iso, "images/pxeboot/rootfs.img") and iso.locate_file(node_iso, "EFI/redhat/grub.cfg")


def test_node_iso_rebuild_rock_ridge_no_joliet_no_isohybrid_same_volume_id(node_iso, base_iso):
    assert not has_joliet(node_iso)
    assert mbr_signature(node_iso) != b"\x55\xaa"
    assert iso.volume_id(node_iso) == iso.volume_id(base_iso)
    report, platforms = el_torito(node_iso)
    assert platforms == ["BIOS", "UEFI"] and "/isolinux/boot.cat" in report


def test_node_iso_embed_area_is_gzip_cpio_zero_padded(node_iso, tmp_path):
    info = json.loads(iso.read_file(node_iso, "COREOS/IGNINFO.JSO", primary=True))
    assert info == {"file": "images/ignition.img"}
    area = xorriso_extract(node_iso, "/images/ignition.img", str(tmp_path / "ignition.img"))
    with open(area, "rb") as f:
        data = f.read()
    assert len(data) == isobase.EMBED_AREA_SIZE and data[:2] == b"\x1f\x8b"
    member = gzip_member(data)
    padded = len(member) + (-len(member) % 4)
    assert not data[len(member) :].strip(b"\0") and padded % 4 == 0
    assert iso.ignition_archive(CONFIG) == data[:padded]  # the archive, its 4-byte zero padding, then zeros
    archive = gzip.decompress(member)
    assert run("cpio", "-t", "--quiet", input=archive).decode().split() == ["config.ign"]
    assert run("cpio", "-tv", "--quiet", input=archive).decode().startswith("-rw-r--r--")
    out = tmp_path / "unpacked"
    out.mkdir()
    run("cpio", "-id", "--quiet", input=archive, cwd=str(out))
    assert json.loads((out / "config.ign").read_text()) == CONFIG
    run("ignition-validate", str(out / "config.ign"))
    assert iso.read_embedded_ignition(node_iso) == CONFIG


def test_node_iso_kargs_get_the_extra_arguments(node_iso, base_iso):
    kargs = iso.read_kargs(node_iso)
    assert set(kargs) == {"EFI/redhat/grub.cfg", "isolinux/isolinux.cfg"}
    assert set(kargs.values()) == {iso.DEFAULT_KARGS + " fips=1"}
    assert set(iso.read_kargs(base_iso).values()) == {iso.DEFAULT_KARGS}


def test_a_config_bigger_than_the_area_grows_it(base_iso, tmp_path):
    big = dict(CONFIG, junk=os.urandom(300 * 1024).hex())
    node = nodeiso.build_node_iso(base_iso, str(tmp_path / "big.iso"), big)
    info = json.loads(iso.read_file(node, "coreos/igninfo.jso"))
    payload = len(iso.ignition_archive(big))
    quarter = isobase.EMBED_AREA_SIZE // 4
    assert info["offset"] == 0 and info["length"] - payload >= quarter and info["length"] % quarter == 0
    assert iso.locate_file(node, "images/ignition.img")[1] == info["length"]
    assert iso.read_embedded_ignition(node) == big
    assert not [n for n in os.listdir(str(tmp_path)) if n.startswith(".")], "temporary files left behind"


def test_aarch64_node_iso_keeps_boot_catalog_and_hides_it(iso_cache, tmp_path):
    base = iso.build_base_iso(iso_cache, 8 * 1024 * 1024, "aarch64")
    tree = nodeiso.extract_tree(base, str(tmp_path / "tree"))
    assert os.path.isfile(os.path.join(tree, "boot.catalog"))
    renamed = nodeiso.normalize_extensions(tree)
    assert os.path.isfile(os.path.join(tree, "boot.catalog")) and ("coreos/kargs.json", "kargs.jso") in renamed
    node = nodeiso.build_node_iso(base, str(tmp_path / "node.aarch64.iso"), CONFIG)
    assert el_torito(node)[1] == ["UEFI"] and "boot.catalog" not in xorriso_ls(node, "/")
    shutil.rmtree(str(tmp_path / "tree"))
    os.makedirs(str(tmp_path / "tree" / "images"))
    (tmp_path / "tree" / "images" / "efiboot.img").write_bytes(b"")
    with pytest.raises(nodeiso.NodeIsoError, match=re.escape("missing boot.catalog file")):
        nodeiso.create_iso(str(tmp_path / "x.iso"), str(tmp_path / "tree"), "x")


def test_s390x_node_iso_renames_initrd_addrsize(iso_cache, tmp_path):
    base = iso.build_base_iso(iso_cache, 8 * 1024 * 1024, "s390x")
    node = nodeiso.build_node_iso(base, str(tmp_path / "node.s390x.iso"), CONFIG)
    assert "initrd.add" in xorriso_ls(node, "/images") and "initrd.addrsize" not in xorriso_ls(node, "/images")
    assert el_torito(node)[1] == ["BIOS"] and iso.read_embedded_ignition(node) == CONFIG
