"""The lab's ISO builder and reader, checked against xorriso, xz and cpio."""

import concurrent.futures
import gzip
import hashlib
import json
import lzma
import os
import shutil
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lab"))

from lab import ignition as ign  # noqa: E402
from lab import iso  # noqa: E402

SIZE = 24 * 1024 * 1024
CONFIG = {"ignition": {"version": "3.2.0"},
          "storage": {"files": [{"path": "/etc/assisted/add-nodes.env",
                                 "contents": {"source": ign.data_url("CLUSTER_ID=abc\n")}}]}}


def run(*cmd, **kwargs):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False, **kwargs)
    assert proc.returncode == 0, "%s failed: %s" % (cmd, proc.stderr.decode())
    return proc.stdout


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("isocache"))


@pytest.fixture(scope="module")
def base_iso(cache):
    return iso.build_base_iso(cache, SIZE)


@pytest.fixture(scope="module")
def node_iso(base_iso, tmp_path_factory):
    dest = str(tmp_path_factory.mktemp("node") / "node.x86_64.iso")
    return iso.embed_ignition(base_iso, dest, CONFIG)


def xorriso_extract(image, inner, dest):
    run("xorriso", "-osirrox", "on", "-indev", image, "-extract", inner, dest)
    return dest


def test_base_iso_has_requested_size(base_iso):
    assert os.path.getsize(base_iso) == SIZE


def test_el_torito_catalog_has_bios_and_uefi_entries(base_iso):
    report = run("xorriso", "-indev", base_iso, "-report_el_torito", "plain").decode()
    assert "El Torito catalog" in report
    assert "/isolinux/isolinux.bin" in report
    assert "/images/efiboot.img" in report
    boot_lines = [line for line in report.splitlines() if line.startswith("El Torito boot img")]
    assert [line.split()[6] for line in boot_lines] == ["BIOS", "UEFI"]


def test_isohybrid_mbr_and_gpt(base_iso):
    with open(base_iso, "rb") as f:
        head = f.read(1024)
    assert head[510:512] == b"\x55\xaa"
    partition_table = head[446:510]
    assert any(partition_table[i * 16 + 4] != 0 for i in range(4)), "no MBR partition entry"
    assert head[512:520] == b"EFI PART"
    with open(iso.ISOHYBRID_MBR, "rb") as f:
        # isohybrid boot code is isohdpfx.bin's first 432 bytes (the rest holds the disk signature/table)
        assert head[:432] == f.read(432)


def test_rock_ridge_and_joliet(base_iso):
    listing = run("xorriso", "-indev", base_iso, "-ls", "/coreos").decode()
    for name in ("igninfo.json", "kargs.json", "features.json"):
        assert "'/coreos/%s'" % name in listing or name in listing
    with open(base_iso, "rb") as f:
        f.seek(17 * iso.SECTOR)
        descriptors = [f.read(iso.SECTOR) for _index in range(4)]
    joliet = [d for d in descriptors if d[0] == 2 and d[88:91] in (b"%/@", b"%/C", b"%/E")]
    assert joliet, "no Joliet supplementary volume descriptor"
    with open(base_iso, "rb") as f:
        f.seek(16 * iso.SECTOR + 40)
        assert f.read(32).decode().strip() == iso.VOLUME_ID


def test_live_layout_files(base_iso, tmp_path):
    info = json.loads(iso.read_file(base_iso, "coreos/igninfo.json"))
    assert info == {"file": "images/ignition.img"}
    area = xorriso_extract(base_iso, "/images/ignition.img", str(tmp_path / "ign.img"))
    with open(area, "rb") as f:
        data = f.read()
    assert len(data) == 256 * 1024 and not data.strip(b"\0")
    for path in ("coreos/features.json", "isolinux/isolinux.cfg", "EFI/redhat/grub.cfg",
                 "images/pxeboot/vmlinuz", "images/pxeboot/initrd.img", "images/pxeboot/rootfs.img"):
        assert iso.locate_file(base_iso, path) is not None, path
    assert iso.locate_file(base_iso, "images/missing.img") is None


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
        region = content[entry["offset"]:entry["offset"] + spec["size"]]
        expected = spec["default"] + entry.get("end", "\n")
        assert region.decode() == expected + "#" * (spec["size"] - len(expected))
    assert set(iso.read_kargs(base_iso).values()) == {spec["default"]}


def test_reader_offsets_match_xorriso(base_iso, tmp_path):
    for inner in ("coreos/kargs.json", "isolinux/isolinux.cfg", "images/pxeboot/initrd.img"):
        extracted = xorriso_extract(base_iso, "/" + inner, str(tmp_path / "x"))
        with open(extracted, "rb") as f:
            assert iso.read_file(base_iso, inner) == f.read(), inner
        os.unlink(extracted)


def test_build_is_cached(cache, base_iso):
    before = os.stat(base_iso).st_mtime_ns
    assert iso.build_base_iso(cache, SIZE) == base_iso
    assert os.stat(base_iso).st_mtime_ns == before


def test_concurrent_builders_share_one_image(tmp_path):
    cache = str(tmp_path / "c")
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        paths = list(pool.map(lambda _: iso.build_base_iso(cache, 8 * 1024 * 1024), range(4)))
    assert len(set(paths)) == 1
    assert sorted(n for n in os.listdir(cache) if n.endswith(".iso")) == [os.path.basename(paths[0])]
    assert iso.read_embedded_ignition(paths[0]) is None


def test_aarch64_image_is_uefi_only(cache):
    image = iso.build_base_iso(cache, 8 * 1024 * 1024, "aarch64")
    report = run("xorriso", "-indev", image, "-report_el_torito", "plain").decode()
    boot_lines = [line for line in report.splitlines() if line.startswith("El Torito boot img")]
    assert [line.split()[6] for line in boot_lines] == ["UEFI"]
    assert [e["path"] for e in json.loads(iso.read_file(image, "coreos/kargs.json"))["files"]] == \
        ["EFI/redhat/grub.cfg"]


def test_unknown_arch_is_refused(cache):
    with pytest.raises(ValueError, match="unknown architecture"):
        iso.build_base_iso(cache, SIZE, "mips")


def test_one_gib_build_takes_seconds(tmp_path):
    start = time.monotonic()
    image = iso.build_base_iso(str(tmp_path), 1024 ** 3)
    elapsed = time.monotonic() - start
    try:
        assert os.path.getsize(image) == 1024 ** 3
        assert elapsed < 60, "1 GiB build took %.1f s" % elapsed
    finally:
        os.unlink(image)


def test_embedded_area_is_xz_crc32_cpio_with_config(node_iso, tmp_path):
    area = xorriso_extract(node_iso, "/images/ignition.img", str(tmp_path / "ignition.img"))
    with open(area, "rb") as f:
        data = f.read()
    # xz refuses trailing NULs that are not stream padding in 4-byte units: cut at the stream end.
    dec = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
    dec.decompress(data)
    assert dec.eof and not dec.unused_data.strip(b"\0")
    stream = data[:len(data) - len(dec.unused_data)]
    (tmp_path / "config.cpio.xz").write_bytes(stream)
    run("xz", "-t", str(tmp_path / "config.cpio.xz"))
    listing = run("xz", "--robot", "--list", str(tmp_path / "config.cpio.xz")).decode()
    checks = [line.split("\t")[6] for line in listing.splitlines() if line.startswith("file\t")]
    assert checks == ["CRC32"], listing
    cpio = run("xz", "-dc", str(tmp_path / "config.cpio.xz"))
    names = run("cpio", "-t", "--quiet", input=cpio).decode().split()
    assert names == ["config.ign"]
    out = tmp_path / "unpacked"
    out.mkdir()
    run("cpio", "-id", "--quiet", input=cpio, cwd=str(out))
    assert json.loads((out / "config.ign").read_text()) == CONFIG
    run("ignition-validate", str(out / "config.ign"))


def test_lab_reader_reads_embedded_config(node_iso):
    assert iso.read_embedded_ignition(node_iso) == CONFIG


def test_embed_changes_only_the_area(base_iso, node_iso):
    offset, length = iso.embed_area(base_iso)

    def digest(path):
        h = hashlib.sha256()
        with open(path, "rb") as f:
            h.update(f.read(offset))
            f.seek(offset + length)
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()

    assert os.path.getsize(node_iso) == os.path.getsize(base_iso)
    assert digest(node_iso) == digest(base_iso)
    assert iso.read_embedded_ignition(base_iso) is None


def test_gzip_payload_is_read(base_iso, tmp_path):
    dest = iso.embed_ignition(base_iso, str(tmp_path / "gz.iso"), CONFIG, compression="gzip")
    offset = iso.embed_area(dest)[0]
    with open(dest, "rb") as f:
        f.seek(offset)
        assert f.read(2) == b"\x1f\x8b"
    assert iso.read_embedded_ignition(dest) == CONFIG


def test_concatenated_archives_with_padding_last_wins(base_iso, tmp_path):
    dest = str(tmp_path / "cat.iso")
    shutil.copyfile(base_iso, dest)
    newer = dict(CONFIG, passwd={"users": [{"name": "core"}]})
    payload = (gzip.compress(iso.cpio_newc({"config.ign": json.dumps(CONFIG).encode()})) + bytes(512)
               + iso.ignition_archive(newer, "xz"))
    offset = iso.embed_area(dest)[0]
    with open(dest, "r+b") as f:
        f.seek(offset)
        f.write(payload)
    assert iso.read_embedded_ignition(dest) == newer


def test_area_without_config_is_an_error(base_iso, tmp_path):
    dest = str(tmp_path / "other.iso")
    shutil.copyfile(base_iso, dest)
    offset = iso.embed_area(dest)[0]
    with open(dest, "r+b") as f:
        f.seek(offset)
        f.write(lzma.compress(iso.cpio_newc({"other.txt": b"x"}), check=lzma.CHECK_CRC32))
    with pytest.raises(iso.IsoFormatError, match="no config.ign"):
        iso.read_embedded_ignition(dest)


def test_oversized_config_is_refused(base_iso, tmp_path):
    big = dict(CONFIG, junk=os.urandom(300 * 1024).hex())
    with pytest.raises(ValueError, match="embed area"):
        iso.embed_ignition(base_iso, str(tmp_path / "big.iso"), big)
    assert not [n for n in os.listdir(str(tmp_path)) if n.startswith(".big")], "temporary file left behind"


def test_not_an_iso(tmp_path):
    junk = tmp_path / "junk.iso"
    junk.write_bytes(bytes(40 * 2048))
    with pytest.raises(iso.IsoFormatError, match="primary volume descriptor"):
        iso.read_embedded_ignition(str(junk))


def test_pxe_artifacts(base_iso, tmp_path):
    out = iso.write_pxe_artifacts(str(tmp_path), "x86_64", CONFIG, base_iso, "http://127.0.0.1:8080/pxe/")
    assert out == str(tmp_path / "boot-artifacts")
    assert sorted(os.listdir(out)) == ["agent.x86_64-initrd.img", "agent.x86_64-rootfs.img",
                                       "agent.x86_64-vmlinuz", "agent.x86_64.ipxe"]
    rootfs = iso.locate_file(base_iso, "images/pxeboot/rootfs.img")[1]
    assert os.path.getsize(os.path.join(out, "agent.x86_64-rootfs.img")) == rootfs
    with open(os.path.join(out, "agent.x86_64-initrd.img"), "rb") as f:
        initrd = f.read()
    base_initrd = iso.read_file(base_iso, "images/pxeboot/initrd.img")
    assert initrd.startswith(base_initrd)
    # The appended archive, read by gzip and GNU cpio rather than the lab's reader.
    tail = initrd[len(base_initrd):].lstrip(b"\0")
    names = run("cpio", "-t", "--quiet", input=gzip.decompress(tail)).decode().split()
    assert names == ["config.ign"]
    files = iso.read_initrd_files(initrd)
    assert json.loads(files["config.ign"]) == CONFIG and "etc/initrd-release" in files
    script = (tmp_path / "boot-artifacts" / "agent.x86_64.ipxe").read_text()
    assert script.startswith("#!ipxe\n")
    assert "initrd --name initrd http://127.0.0.1:8080/pxe/agent.x86_64-initrd.img" in script
    assert "kernel http://127.0.0.1:8080/pxe/agent.x86_64-vmlinuz" in script
    assert "coreos.live.rootfs_url=http://127.0.0.1:8080/pxe/agent.x86_64-rootfs.img" in script
    assert "ignition.firstboot" in script and "coreos.liveiso" not in script


def test_cpio_round_trip_matches_gnu_cpio(tmp_path):
    archive = iso.cpio_newc({"a.txt": b"one", "dir/b.bin": bytes(range(7))})
    assert run("cpio", "-t", "--quiet", input=archive).decode().split() == ["a.txt", "dir/b.bin"]
    files, rest = iso.parse_cpio_newc(archive + b"tail")
    assert files == {"a.txt": b"one", "dir/b.bin": bytes(range(7))} and rest == b"tail"
    # And the other way round: an archive written by GNU cpio.
    (tmp_path / "x.txt").write_bytes(b"hello")
    gnu = run("cpio", "-o", "-H", "newc", "--quiet", input=b"x.txt\n", cwd=str(tmp_path))
    assert iso.parse_cpio_newc(gnu)[0] == {"x.txt": b"hello"}
