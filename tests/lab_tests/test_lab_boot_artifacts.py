"""Reading an ISO's embedded Ignition back, PXE artifacts, the config ISO and cpio archives, checked with xorriso,
gzip, xz and GNU cpio."""

import gzip
import json
import lzma
import os
import re
import shutil

import pytest
from iso_helpers import CONFIG, el_torito, gzip_member, run, xorriso_ls
from lab import iso, nodeiso

# --------------------------------------------------------------------------- the reader


def with_embedded(base_iso, dest, payload: bytes) -> str:
    """A copy of ``base_iso`` at ``dest`` whose Ignition embed area starts with ``payload``."""
    shutil.copyfile(base_iso, dest)
    with open(dest, "r+b") as f:
        f.seek(iso.embed_area(dest)[0])
        f.write(payload)
    return dest


def test_reader_reads_xz_and_concatenated_archives(base_iso, tmp_path):
    dest = with_embedded(base_iso, str(tmp_path / "cat.iso"), iso.ignition_archive(CONFIG, "xz"))
    assert iso.read_embedded_ignition(dest) == CONFIG
    newer = dict(CONFIG, passwd={"users": [{"name": "core"}]})
    payload = (
        gzip.compress(iso.cpio_newc({"config.ign": json.dumps(CONFIG).encode()}))
        + bytes(512)
        + iso.ignition_archive(newer, "xz")
    )
    assert iso.read_embedded_ignition(with_embedded(base_iso, dest, payload)) == newer
    # xz refuses trailing NULs that are not stream padding: cut at the stream end.
    xz = iso.ignition_archive(CONFIG, "xz")
    dec = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
    dec.decompress(xz)
    (tmp_path / "config.cpio.xz").write_bytes(xz[: len(xz) - len(dec.unused_data)])
    checks = [
        line.split("\t")[6]
        for line in run("xz", "--robot", "--list", str(tmp_path / "config.cpio.xz")).decode().splitlines()
        if line.startswith("file\t")
    ]
    assert checks == ["CRC32"]


def test_area_without_config_is_an_error(base_iso, tmp_path):
    other = lzma.compress(iso.cpio_newc({"other.txt": b"x"}), check=lzma.CHECK_CRC32)
    dest = with_embedded(base_iso, str(tmp_path / "other.iso"), other)
    with pytest.raises(iso.IsoFormatError, match=re.escape("no config.ign")):
        iso.read_embedded_ignition(dest)


def test_not_an_iso(tmp_path):
    junk = tmp_path / "junk.iso"
    junk.write_bytes(bytes(40 * 2048))
    with pytest.raises(iso.IsoFormatError, match="primary volume descriptor"):
        iso.read_embedded_ignition(str(junk))


# --------------------------------------------------------------------------- PXE and the config ISO


@pytest.fixture(scope="module")
def tree(base_iso, tmp_path_factory):
    return nodeiso.extract_tree(base_iso, str(tmp_path_factory.mktemp("tree") / "t"))


def test_pxe_artifacts(base_iso, tree, tmp_path):
    out = nodeiso.write_pxe_artifacts(str(tmp_path), "x86_64", CONFIG, tree, "http://127.0.0.1:8080/pxe", " fips=1")
    assert out == str(tmp_path / "boot-artifacts")
    assert sorted(os.listdir(out)) == [
        "node.x86_64-initrd.img",
        "node.x86_64-rootfs.img",
        "node.x86_64-vmlinuz",
        "node.x86_64.ipxe",
    ]
    rootfs = iso.locate_file(base_iso, "images/pxeboot/rootfs.img")[1]
    assert os.path.getsize(os.path.join(out, "node.x86_64-rootfs.img")) == rootfs
    with open(os.path.join(out, "node.x86_64-initrd.img"), "rb") as f:
        initrd = f.read()
    base_initrd = iso.read_file(base_iso, "images/pxeboot/initrd.img")
    assert initrd.startswith(base_initrd)
    # The appended archive, read by gzip and GNU cpio rather than the lab's reader.
    tail = initrd[len(base_initrd) :]
    assert tail[:2] == b"\x1f\x8b"
    archive = gzip.decompress(gzip_member(tail))
    assert run("cpio", "-t", "--quiet", input=archive).decode().split() == ["config.ign"]
    assert iso.read_pxe_ignition(os.path.join(out, "node.x86_64-initrd.img")) == CONFIG
    assert "etc/initrd-release" in iso.read_initrd_files(initrd)
    script = (tmp_path / "boot-artifacts" / "node.x86_64.ipxe").read_text()
    assert script == (
        "#!ipxe\ninitrd --name initrd http://127.0.0.1:8080/pxe/node.x86_64-initrd.img\n"
        "kernel http://127.0.0.1:8080/pxe/node.x86_64-vmlinuz initrd=initrd "
        "coreos.live.rootfs_url=http://127.0.0.1:8080/pxe/node.x86_64-rootfs.img "
        "ignition.firstboot ignition.platform.id=metal fips=1\nboot\n"
    )
    assert "coreos.liveiso" not in script


def test_pxe_without_base_url_has_no_ipxe_script(tree, tmp_path):
    out = nodeiso.write_pxe_artifacts(str(tmp_path), "x86_64", CONFIG, tree)
    assert not [name for name in os.listdir(out) if name.endswith(".ipxe")]


def test_pxe_arch_specifics(iso_cache, tmp_path):
    arm = nodeiso.extract_tree(iso.build_base_iso(iso_cache, 8 * 1024 * 1024, "aarch64"), str(tmp_path / "arm"))
    out = nodeiso.write_pxe_artifacts(str(tmp_path / "a"), "aarch64", CONFIG, arm)
    with open(os.path.join(out, "node.aarch64-vmlinuz"), "rb") as f:
        assert f.read(2) == b"MZ"  # gunzipped, as node-joiner does for arm64
    s390x = nodeiso.extract_tree(iso.build_base_iso(iso_cache, 8 * 1024 * 1024, "s390x"), str(tmp_path / "z"))
    out = nodeiso.write_pxe_artifacts(str(tmp_path / "s"), "s390x", CONFIG, s390x)
    assert sorted(os.listdir(out)) == [
        "node.s390x-generic.ins",
        "node.s390x-initrd.addrsize",
        "node.s390x-initrd.img",
        "node.s390x-rootfs.img",
        "node.s390x-vmlinuz",
    ]
    with open(os.path.join(out, "node.s390x-initrd.addrsize"), "rb") as f:
        addrsize = f.read()
    assert int.from_bytes(addrsize[8:], "big") == os.path.getsize(os.path.join(out, "node.s390x-initrd.img"))
    with open(os.path.join(out, "node.s390x-generic.ins"), encoding="utf-8") as handle:
        ins = handle.read()
    assert "node.s390x-vmlinuz" in ins and "node.s390x-initrd.img" in ins and "node.s390x-initrd.addrsize" in ins


def test_config_iso_holds_config_gz_with_absolute_paths_and_modes(tmp_path):
    files = [("/etc/assisted/manifests/infraenv.yaml", b"kind: InfraEnv\n", 0o600), ("/etc/issue", b"\\S\n", 0o644)]
    dest = nodeiso.build_config_iso(str(tmp_path / "agentconfig.noarch.iso"), files)
    assert xorriso_ls(dest, "/") == ["config.gz"]
    assert iso.volume_id(dest) == "agent_configimage" and "El Torito" not in el_torito(dest)[0]
    found, modes = iso.read_config_iso(dest)
    assert found == {path: data for path, data, _mode in files}
    assert modes == {"/etc/assisted/manifests/infraenv.yaml": 0o100600, "/etc/issue": 0o100644}
    archive = gzip.decompress(iso.read_file(dest, "config.gz"))
    assert run("cpio", "-t", "--quiet", input=archive).decode().split() == [p for p, _d, _m in files]


def test_cpio_round_trip_matches_gnu_cpio(tmp_path):
    archive = iso.cpio_newc({"a.txt": b"one", "dir/b.bin": bytes(range(7))})
    assert run("cpio", "-t", "--quiet", input=archive).decode().split() == ["a.txt", "dir/b.bin"]
    files, rest = iso.parse_cpio_newc(archive + b"tail")
    assert files == {"a.txt": b"one", "dir/b.bin": bytes(range(7))} and rest == b"tail"
    # And the other way round: an archive written by GNU cpio.
    (tmp_path / "x.txt").write_bytes(b"hello")
    gnu = run("cpio", "-o", "-H", "newc", "--quiet", input=b"x.txt\n", cwd=str(tmp_path))
    assert iso.parse_cpio_newc(gnu)[0] == {"x.txt": b"hello"}
