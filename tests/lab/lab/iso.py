"""RHCOS-like live ISOs for the lab, and the lab's own reader for them.

The base ISO is built once per (size, arch) with xorriso in the RHCOS live layout
(FACTS.md section 3).  The reader here is deliberately independent of the
collection's (which uses pycdlib): it walks ISO9660 directory records itself and
decodes the embedded cpio archives itself, so a bug shared by both cannot hide.
"""

import fcntl
import gzip
import io
import json
import lzma
import os
import shutil
import subprocess
import tempfile
import zlib

SECTOR = 2048
VOLUME_ID = "rhcos-418.94.202410090804-0"
EMBED_AREA_SIZE = 256 * 1024
KARGS_AREA_SIZE = 1100
DEFAULT_KARGS = "coreos.liveiso=%s ignition.firstboot ignition.platform.id=metal" % VOLUME_ID
ARCHES = ("x86_64", "aarch64", "ppc64le", "s390x")

ISOLINUX_BIN = "/usr/lib/ISOLINUX/isolinux.bin"
ISOHYBRID_MBR = "/usr/lib/ISOLINUX/isohdpfx.bin"
LDLINUX_C32 = "/usr/lib/syslinux/modules/bios/ldlinux.c32"

XZ_MAGIC = b"\xfd7zXZ\x00"
GZIP_MAGIC = b"\x1f\x8b"
CPIO_NEWC_MAGIC = b"070701"
COPY_CHUNK = 4 * 1024 * 1024


class IsoFormatError(Exception):
    """The file is not an ISO9660 image in the expected layout."""


# --------------------------------------------------------------------------- build


def build_base_iso(cache_dir, size_bytes, arch="x86_64"):
    """Return the path of a cached base ISO of about ``size_bytes``, building it if needed.

    Concurrent callers (threads or processes) are serialised by a lock file; the
    finished image appears under its final name only through an atomic rename.
    """
    if arch not in ARCHES:
        raise ValueError("unknown architecture %r, expected one of %s" % (arch, ", ".join(ARCHES)))
    os.makedirs(cache_dir, exist_ok=True)
    final = os.path.join(cache_dir, "rhcos-live.%s.%d.iso" % (arch, size_bytes))
    if os.path.exists(final):
        return final
    with open(final + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(final):
            return final
        with tempfile.TemporaryDirectory(dir=cache_dir, prefix=".build-") as work:
            # xorriso's overhead (boot images, directories, hybrid tables) is not
            # known in advance: measure it on an image without filler, then size
            # the filler so the final image lands on size_bytes.
            probe = _build_iso(work, arch, filler_bytes=0, name="probe.iso")
            overhead = os.path.getsize(probe)
            os.unlink(probe)
            filler = max(0, (size_bytes - overhead) // SECTOR * SECTOR)
            built = _build_iso(work, arch, filler_bytes=filler, name="base.iso")
            os.replace(built, final)
    return final


def _build_iso(work, arch, filler_bytes, name):
    tree = os.path.join(work, "tree-" + name)
    shutil.rmtree(tree, ignore_errors=True)
    _write_live_tree(tree, arch, filler_bytes)
    out = os.path.join(work, name)
    bios = arch == "x86_64"
    cmd = ["xorriso", "-as", "mkisofs", "-quiet", "-o", out, "-V", VOLUME_ID,
           "-volset", VOLUME_ID, "-R", "-J", "-joliet-long"]
    if bios:
        cmd += ["-isohybrid-mbr", ISOHYBRID_MBR,
                "-b", "isolinux/isolinux.bin", "-c", "isolinux/boot.cat",
                "-no-emul-boot", "-boot-load-size", "4", "-boot-info-table",
                "-eltorito-alt-boot"]
    else:
        cmd += ["-c", "images/boot.cat"]
    cmd += ["-e", "images/efiboot.img", "-no-emul-boot", "-isohybrid-gpt-basdat", tree]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if proc.returncode != 0:
        raise RuntimeError("xorriso failed (%d): %s" % (proc.returncode, proc.stderr.decode(errors="replace")))
    shutil.rmtree(tree)
    return out


def _write_file(path, data, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def _sparse_file(path, size):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)


def kargs_region(kargs, size=KARGS_AREA_SIZE, end="\n", pad="#"):
    """The bytes of one kargs area as coreos-installer writes it."""
    text = kargs + end
    if len(text) > size:
        raise ValueError("kernel arguments longer than the %d-byte area" % size)
    return (text + pad * (size - len(text))).encode()


def _config_with_kargs(before, after):
    """Return (config bytes, offset of the kargs area inside them)."""
    head = before.encode()
    return head + kargs_region(DEFAULT_KARGS) + after.encode(), len(head)


def _write_live_tree(tree, arch, filler_bytes):
    isolinux_cfg, isolinux_off = _config_with_kargs(
        "serial 0\ndefault vesamenu.c32\ntimeout 600\n\n"
        "label linux\n  menu label ^Fedora CoreOS (Live)\n  menu default\n"
        "  kernel /images/pxeboot/vmlinuz\n"
        "  append initrd=/images/pxeboot/initrd.img,/images/ignition.img ",
        "\nmenu end\n")
    grub_cfg, grub_off = _config_with_kargs(
        "set timeout=5\n\nmenuentry 'RHEL CoreOS (Live)' --class fedora --class gnu-linux {\n"
        "\tlinux /images/pxeboot/vmlinuz ",
        "\n\tinitrd /images/pxeboot/initrd.img /images/ignition.img\n}\n")
    # One entry spells out pad/end, the other relies on the defaults: both forms
    # exist in the wild and readers must accept them.
    kargs_json = {
        "default": DEFAULT_KARGS,
        "files": [
            {"path": "EFI/redhat/grub.cfg", "offset": grub_off, "pad": "#", "end": "\n"},
        ],
        "size": KARGS_AREA_SIZE,
    }
    if arch == "x86_64":
        kargs_json["files"].append({"path": "isolinux/isolinux.cfg", "offset": isolinux_off})
        _write_file(os.path.join(tree, "isolinux/isolinux.cfg"), isolinux_cfg)
        shutil.copyfile(ISOLINUX_BIN, os.path.join(tree, "isolinux/isolinux.bin"))
        shutil.copyfile(LDLINUX_C32, os.path.join(tree, "isolinux/ldlinux.c32"))
    _write_file(os.path.join(tree, "EFI/redhat/grub.cfg"), grub_cfg)
    _write_file(os.path.join(tree, "coreos/kargs.json"), json.dumps(kargs_json).encode())
    _write_file(os.path.join(tree, "coreos/igninfo.json"), json.dumps({"file": "images/ignition.img"}).encode())
    _write_file(os.path.join(tree, "coreos/features.json"),
                json.dumps({"installer-config": True, "live-initrd-network-kargs": True}).encode())
    _write_file(os.path.join(tree, "images/ignition.img"), bytes(EMBED_AREA_SIZE))
    _make_efi_image(os.path.join(tree, "images/efiboot.img"))
    _write_file(os.path.join(tree, "images/pxeboot/vmlinuz"), b"MZ" + bytes(64 * 1024 - 2))
    # The live initrd is itself a cpio archive, so appending the ignition
    # archive to it (PXE) gives a well-formed concatenation.
    _write_file(os.path.join(tree, "images/pxeboot/initrd.img"),
                gzip.compress(cpio_newc({"etc/initrd-release": b"NAME=\"RHEL CoreOS\"\n"}), mtime=0))
    _sparse_file(os.path.join(tree, "images/pxeboot/rootfs.img"), filler_bytes)


def _make_efi_image(path):
    """A small FAT image for the EFI El Torito entry (zeros if mkfs.vfat is missing:
    xorriso does not look inside it)."""
    _sparse_file(path, 2 * 1024 * 1024)
    mkfs = shutil.which("mkfs.vfat") or shutil.which("mkfs.vfat", path="/usr/sbin:/sbin")
    if mkfs:
        subprocess.run([mkfs, "-n", "EFIBOOT", path], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


# --------------------------------------------------------------------------- cpio


def cpio_newc(files):
    """A cpio "newc" archive of ``{name: bytes}`` (regular files, mode 0644)."""
    out = io.BytesIO()
    for ino, (name, data) in enumerate(sorted(files.items()), start=1):
        _cpio_entry(out, ino, name, 0o100644, data)
    _cpio_entry(out, 0, "TRAILER!!!", 0, b"")
    return out.getvalue()


def _cpio_entry(out, ino, name, mode, data):
    encoded = name.encode() + b"\0"
    fields = (ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(encoded), 0)
    out.write(CPIO_NEWC_MAGIC + b"".join(b"%08X" % v for v in fields))
    out.write(encoded)
    out.write(bytes(-(110 + len(encoded)) % 4))
    out.write(data)
    out.write(bytes(-len(data) % 4))


def parse_cpio_newc(data):
    """Return ({name: bytes} of the regular files, bytes left after the trailer)."""
    files = {}
    pos = 0
    while True:
        header = data[pos:pos + 110]
        if len(header) < 110 or header[:6] != CPIO_NEWC_MAGIC:
            raise IsoFormatError("bad cpio newc header at offset %d" % pos)
        fields = [int(header[6 + 8 * i:14 + 8 * i], 16) for i in range(13)]
        mode, filesize, namesize = fields[1], fields[6], fields[11]
        name_start = pos + 110
        name = data[name_start:name_start + namesize - 1].decode()
        data_start = name_start + namesize + (-(110 + namesize) % 4)
        pos = data_start + filesize + (-filesize % 4)
        if name == "TRAILER!!!":
            return files, data[pos:]
        if mode & 0o170000 == 0o100000:
            files[name[2:] if name.startswith("./") else name] = data[data_start:data_start + filesize]


def _decompress_one(data):
    """Decompress the leading xz or gzip stream; return (payload, rest)."""
    if data.startswith(XZ_MAGIC):
        dec = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
    elif data.startswith(GZIP_MAGIC):
        dec = zlib.decompressobj(wbits=31)
    else:
        raise IsoFormatError("unknown compression (magic %r)" % data[:6])
    payload = dec.decompress(data)
    if not dec.eof:
        raise IsoFormatError("truncated compressed stream")
    return payload, dec.unused_data


def read_initrd_files(data):
    """All files of a (possibly concatenated, compressed or NUL-padded) initrd image.

    Later archives override earlier ones, as in the kernel's initramfs unpacking.
    """
    files = {}
    while True:
        data = data.lstrip(b"\0")
        if not data:
            return files
        if data.startswith(CPIO_NEWC_MAGIC):
            found, data = parse_cpio_newc(data)
        else:
            payload, data = _decompress_one(data)
            found = {}
            while payload.lstrip(b"\0"):
                more, payload = parse_cpio_newc(payload.lstrip(b"\0"))
                found.update(more)
        files.update(found)


def ignition_archive(ignition, compression="xz"):
    """The compressed cpio archive holding config.ign, as put in the embed area."""
    archive = cpio_newc({"config.ign": json.dumps(ignition, separators=(",", ":")).encode()})
    if compression == "xz":
        # The kernel's XZ decoder only knows CRC32 (and none); Python defaults to CRC64.
        return lzma.compress(archive, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32)
    if compression == "gzip":
        return gzip.compress(archive, mtime=0)
    raise ValueError("compression must be 'xz' or 'gzip', not %r" % compression)


# --------------------------------------------------------------------------- ISO9660 reader


def _both_endian32(record, offset):
    return int.from_bytes(record[offset:offset + 4], "little")


def _dir_records(f, extent, length):
    """Yield (name, is_dir, extent, size) of one directory's records."""
    f.seek(extent * SECTOR)
    data = f.read(length)
    pos = 0
    while pos < len(data):
        rec_len = data[pos]
        if rec_len == 0:
            # Records never straddle a sector: the rest of this sector is padding.
            pos = (pos // SECTOR + 1) * SECTOR
            continue
        rec = data[pos:pos + rec_len]
        name_len = rec[32]
        raw_name = rec[33:33 + name_len]
        pos += rec_len
        if raw_name in (b"\0", b"\1"):
            continue
        # The system use area follows the name, padded to an even offset.
        system_use = rec[33 + name_len + (1 - name_len % 2):]
        name = _rock_ridge_name(system_use)
        if name is None:
            name = raw_name.decode("ascii", "replace").split(";")[0].rstrip(".")
        yield name, bool(rec[25] & 0x02), _both_endian32(rec, 2), _both_endian32(rec, 10)


def _rock_ridge_name(system_use):
    """The Rock Ridge (RRIP "NM") name in a system use area, or None.

    The ISO9660 names are 8.3 upper case (igninfo.json is IGNINFO.JSO), so the
    real names only exist in Rock Ridge or Joliet.
    """
    parts = []
    pos = 0
    while pos + 4 <= len(system_use):
        sig, length = system_use[pos:pos + 2], system_use[pos + 2]
        if length < 4:
            break
        if sig == b"NM":
            flags = system_use[pos + 4]
            parts.append(system_use[pos + 5:pos + length])
            if not flags & 0x01:  # no CONTINUE flag: the name is complete
                return b"".join(parts).decode("utf-8", "replace")
        pos += length
    return None


def locate_file(iso_path, path):
    """Return (byte offset, size) of a file inside the ISO, or None if absent.

    Rock Ridge names are used when present, else the ISO9660 names, compared
    case-insensitively.
    """
    with open(iso_path, "rb") as f:
        f.seek(16 * SECTOR)
        pvd = f.read(SECTOR)
        if pvd[0:1] != b"\x01" or pvd[1:6] != b"CD001":
            raise IsoFormatError("%s: no ISO9660 primary volume descriptor at sector 16" % iso_path)
        root = pvd[156:156 + 34]
        extent, size, is_dir = _both_endian32(root, 2), _both_endian32(root, 10), True
        for part in [p for p in path.strip("/").split("/") if p]:
            if not is_dir:
                return None
            for name, child_is_dir, child_extent, child_size in _dir_records(f, extent, size):
                if name.lower() == part.lower():
                    extent, size, is_dir = child_extent, child_size, child_is_dir
                    break
            else:
                return None
        if is_dir:
            return None
        return extent * SECTOR, size


def read_file(iso_path, path):
    """The bytes of a (small) file inside the ISO, or None if absent."""
    where = locate_file(iso_path, path)
    if where is None:
        return None
    with open(iso_path, "rb") as f:
        f.seek(where[0])
        return f.read(where[1])


def copy_file_out(iso_path, path, dest):
    """Stream a file out of the ISO to ``dest`` without loading it into memory."""
    where = locate_file(iso_path, path)
    if where is None:
        raise IsoFormatError("%s: no %s in the image" % (iso_path, path))
    offset, remaining = where
    with open(iso_path, "rb") as src, open(dest, "wb") as out:
        src.seek(offset)
        while remaining:
            chunk = src.read(min(COPY_CHUNK, remaining))
            if not chunk:
                raise IsoFormatError("%s: %s extends past the end of the image" % (iso_path, path))
            out.write(chunk)
            remaining -= len(chunk)


def embed_area(iso_path):
    """Return (byte offset, length) of the Ignition embed area named by coreos/igninfo.json."""
    info_raw = read_file(iso_path, "coreos/igninfo.json")
    if info_raw is None:
        raise IsoFormatError("%s: no coreos/igninfo.json, not a CoreOS live ISO" % iso_path)
    info = json.loads(info_raw)
    where = locate_file(iso_path, info["file"])
    if where is None:
        raise IsoFormatError("%s: igninfo.json names %s, which is not in the image" % (iso_path, info["file"]))
    offset = info.get("offset", 0)
    length = info.get("length", where[1] - offset)
    return where[0] + offset, length


def read_embedded_ignition(iso_path):
    """The Ignition config embedded in the ISO as a dict, or None when the area is all zeros."""
    offset, length = embed_area(iso_path)
    with open(iso_path, "rb") as f:
        f.seek(offset)
        area = f.read(length)
    if not area.strip(b"\0"):
        return None
    files = read_initrd_files(area)
    if "config.ign" not in files:
        raise IsoFormatError("%s: the embed area holds no config.ign (files: %s)" % (iso_path, sorted(files)))
    return json.loads(files["config.ign"])


def read_kargs(iso_path):
    """Map each kargs.json file path to the kernel arguments found in its area."""
    spec = json.loads(read_file(iso_path, "coreos/kargs.json"))
    found = {}
    with open(iso_path, "rb") as f:
        for entry in spec["files"]:
            start = locate_file(iso_path, entry["path"])[0] + entry["offset"]
            f.seek(start)
            region = f.read(spec["size"]).decode()
            found[entry["path"]] = region.split(entry.get("end", "\n"), 1)[0]
    return found


# --------------------------------------------------------------------------- writers


def embed_ignition(base_iso, dest_iso, ignition_dict, compression="xz"):
    """Write a copy of ``base_iso`` to ``dest_iso`` with ``ignition_dict`` in its embed area.

    Like node-joiner: the image is copied, never rebuilt (a rebuild would change
    the hybrid MBR/GPT), the area is overwritten in place and zero-padded, and
    the result appears under ``dest_iso`` by an atomic rename.
    """
    payload = ignition_archive(ignition_dict, compression)
    offset, length = embed_area(base_iso)
    if len(payload) > length:
        raise ValueError("compressed ignition is %d bytes, the embed area only %d" % (len(payload), length))
    dest_dir = os.path.dirname(os.path.abspath(dest_iso))
    fd, tmp = tempfile.mkstemp(dir=dest_dir, prefix="." + os.path.basename(dest_iso) + ".")
    try:
        os.close(fd)
        shutil.copyfile(base_iso, tmp)
        with open(tmp, "r+b") as f:
            f.seek(offset)
            f.write(payload + bytes(length - len(payload)))
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest_iso)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return dest_iso


def pxe_artifact_names(arch):
    """File names node-joiner gives the PXE artifacts of one architecture."""
    return {
        "initrd": "agent.%s-initrd.img" % arch,
        "rootfs": "agent.%s-rootfs.img" % arch,
        "kernel": "agent.%s-vmlinuz" % arch,
        "ipxe": "agent.%s.ipxe" % arch,
    }


def write_pxe_artifacts(dest_dir, arch, ignition, base_iso, base_url=None):
    """Write ``dest_dir``/boot-artifacts/ from ``base_iso``; return the directory.

    The initrd is the live initrd with the ignition appended as a gzip cpio
    archive (as assisted-image-service does); the iPXE script references
    ``base_url`` (relative names when it is None).
    """
    out_dir = os.path.join(dest_dir, "boot-artifacts")
    os.makedirs(out_dir, exist_ok=True)
    names = pxe_artifact_names(arch)
    copy_file_out(base_iso, "images/pxeboot/rootfs.img", os.path.join(out_dir, names["rootfs"]))
    copy_file_out(base_iso, "images/pxeboot/vmlinuz", os.path.join(out_dir, names["kernel"]))
    initrd = read_file(base_iso, "images/pxeboot/initrd.img")
    if initrd is None:
        raise IsoFormatError("%s: no images/pxeboot/initrd.img" % base_iso)
    with open(os.path.join(out_dir, names["initrd"]), "wb") as f:
        f.write(initrd)
        f.write(bytes(-len(initrd) % 4))
        f.write(ignition_archive(ignition, "gzip"))
    prefix = base_url.rstrip("/") + "/" if base_url else ""
    kargs = read_kargs(base_iso)
    live_kargs = next(iter(kargs.values())).replace("coreos.liveiso=%s" % VOLUME_ID, "").strip()
    script = (
        "#!ipxe\n"
        "initrd --name initrd {p}{initrd}\n"
        "kernel {p}{kernel} initrd=initrd coreos.live.rootfs_url={p}{rootfs} {kargs}\n"
        "boot\n"
    ).format(p=prefix, initrd=names["initrd"], kernel=names["kernel"], rootfs=names["rootfs"], kargs=live_kargs)
    with open(os.path.join(out_dir, names["ipxe"]), "w") as f:
        f.write(script)
    return out_dir
