"""RHCOS-like base live ISOs for the lab, one per (size, architecture), built once with xorriso and cached.

The layout is the one a real RHCOS live ISO has and node-joiner extracts (what it reads and rewrites):

- ``coreos/igninfo.json`` (embed area ``images/ignition.img``), ``coreos/kargs.json`` (the files holding a
  ``# COREOS_KARG_EMBED_AREA``-style kargs area), ``coreos/features.json``;
- ``images/ignition.img`` (256 KiB of zeros), ``images/pxeboot/{vmlinuz,initrd.img,rootfs.img}`` (rootfs is the
  filler that brings the image to the requested size, sparse on disk);
- per architecture: x86_64 ``isolinux/`` (BIOS El Torito, catalog ``isolinux/boot.cat``) plus
  ``images/efiboot.img`` (UEFI), isohybrid MBR and GPT; aarch64 UEFI only with the catalog ``boot.catalog`` at the
  root (the file node-joiner must not rename) and a gzip-compressed kernel; s390x ``images/cdboot.img``,
  ``images/cdboot.prm``, ``images/initrd.addrsize`` and ``generic.ins``; ppc64le ``boot/grub/grub.cfg``, no El
  Torito.

Names: Rock Ridge carries the real names (``igninfo.json``), Joliet too, and the primary ISO9660 names are level 1
(8.3, upper case: ``COREOS/IGNINFO.JSO``), as in a real RHCOS ISO, which is what coreos-installer reads
(coreos/coreos-installer src/live/embed.rs@bee4500186302e3773afe969ecabb441f2d77279).
"""

import fcntl
import gzip
import json
import os
import shutil
import subprocess
import tempfile

SECTOR = 2048
VOLUME_ID = "rhcos-418.94.202410090804-0"
EMBED_AREA_SIZE = 256 * 1024
KARGS_AREA_SIZE = 1100
DEFAULT_KARGS = "coreos.liveiso=%s ignition.firstboot ignition.platform.id=metal" % VOLUME_ID
ARCHES = ("x86_64", "aarch64", "ppc64le", "s390x")
INITRD_LOAD_ADDRESS = 0x02000000  # where the s390x loader puts the initrd (images/initrd.addrsize)

ISOLINUX_BIN = "/usr/lib/ISOLINUX/isolinux.bin"
ISOHYBRID_MBR = "/usr/lib/ISOLINUX/isohdpfx.bin"
LDLINUX_C32 = "/usr/lib/syslinux/modules/bios/ldlinux.c32"
# The x86_64 El Torito entries of an RHCOS ISO: BIOS (isolinux, catalog isolinux/boot.cat), then UEFI.
X86_64_EL_TORITO = (
    "-b",
    "isolinux/isolinux.bin",
    "-c",
    "isolinux/boot.cat",
    "-no-emul-boot",
    "-boot-load-size",
    "4",
    "-boot-info-table",
    "-eltorito-alt-boot",
    "-e",
    "images/efiboot.img",
    "-no-emul-boot",
)
# The cache of the running lab and of labctl build-iso: <repository>/.cache/lab-iso.
LAB_CACHE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), ".cache", "lab-iso"
)


def build_base_iso(cache_dir, size_bytes, arch="x86_64"):
    """Return the path of a cached base ISO of about ``size_bytes``, building it if needed.

    Concurrent callers (threads or processes) are serialised by a lock file; the
    finished image appears under its final name only through an atomic rename.
    """
    if arch not in ARCHES:
        raise ValueError("unknown architecture %r, expected one of %s" % (arch, ", ".join(ARCHES)))
    os.makedirs(cache_dir, exist_ok=True)
    final = os.path.join(cache_dir, "rhcos-live.%s.%d.v2.iso" % (arch, size_bytes))
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


def _boot_options(arch):
    if arch == "x86_64":
        return ["-isohybrid-mbr", ISOHYBRID_MBR, *X86_64_EL_TORITO, "-isohybrid-gpt-basdat"]
    if arch == "aarch64":
        return ["-c", "boot.catalog", "-e", "images/efiboot.img", "-no-emul-boot", "-isohybrid-gpt-basdat"]
    if arch == "s390x":
        return ["-c", "boot.catalog", "-b", "images/cdboot.img", "-no-emul-boot"]
    return []  # ppc64le boots through CHRP/grub, no El Torito


def _build_iso(work, arch, filler_bytes, name):
    tree = os.path.join(work, "tree-" + name)
    shutil.rmtree(tree, ignore_errors=True)
    _write_live_tree(tree, arch, filler_bytes)
    out = os.path.join(work, name)
    cmd = [
        "xorriso",
        "-as",
        "mkisofs",
        "-quiet",
        "-o",
        out,
        "-V",
        VOLUME_ID,
        "-volset",
        VOLUME_ID,
        "-R",
        "-J",
        "-joliet-long",
        *_boot_options(arch),
        tree,
    ]
    proc = subprocess.run(cmd, capture_output=True, check=False)
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


def _grub_cfg():
    return _config_with_kargs(
        "set timeout=5\n\nmenuentry 'RHEL CoreOS (Live)' --class fedora --class gnu-linux {\n"
        "\tlinux /images/pxeboot/vmlinuz ",
        "\n\tinitrd /images/pxeboot/initrd.img /images/ignition.img\n}\n",
    )


def _write_live_tree(tree, arch, filler_bytes):
    kargs_files = []

    def kargs_file(path, content_and_offset, **extra):
        content, offset = content_and_offset
        _write_file(os.path.join(tree, path), content)
        kargs_files.append(dict({"path": path, "offset": offset}, **extra))

    initrd = gzip.compress(_initrd_cpio(arch), mtime=0)
    kernel = b"MZ" + bytes(64 * 1024 - 2)
    if arch == "x86_64":
        # One entry spells out pad/end, the other relies on the defaults: both forms exist in the wild.
        kargs_file("EFI/redhat/grub.cfg", _grub_cfg(), pad="#", end="\n")
        kargs_file(
            "isolinux/isolinux.cfg",
            _config_with_kargs(
                "serial 0\ndefault vesamenu.c32\ntimeout 600\n\n"
                "label linux\n  menu label ^RHEL CoreOS (Live)\n  menu default\n"
                "  kernel /images/pxeboot/vmlinuz\n"
                "  append initrd=/images/pxeboot/initrd.img,/images/ignition.img ",
                "\nmenu end\n",
            ),
        )
        shutil.copyfile(ISOLINUX_BIN, os.path.join(tree, "isolinux/isolinux.bin"))
        shutil.copyfile(LDLINUX_C32, os.path.join(tree, "isolinux/ldlinux.c32"))
        _make_efi_image(os.path.join(tree, "images/efiboot.img"))
    elif arch == "aarch64":
        kargs_file("EFI/redhat/grub.cfg", _grub_cfg(), pad="#", end="\n")
        _make_efi_image(os.path.join(tree, "images/efiboot.img"))
        kernel = gzip.compress(kernel, mtime=0)  # arm64 kernels ship gzip-compressed; PXE gunzips them
    elif arch == "ppc64le":
        kargs_file("boot/grub/grub.cfg", _grub_cfg())
    else:  # s390x
        kargs_file("images/cdboot.prm", _config_with_kargs("", ""))
        _write_file(os.path.join(tree, "images/cdboot.img"), bytes(64 * 1024))
        _write_file(
            os.path.join(tree, "images/initrd.addrsize"),
            INITRD_LOAD_ADDRESS.to_bytes(8, "big") + len(initrd).to_bytes(8, "big"),
        )
        _write_file(
            os.path.join(tree, "generic.ins"),
            b"* minimal lpar ins file\nimages/kernel.img 0x00000000\nimages/initrd.img 0x02000000\n"
            b"images/genericdvd.prm 0x00010480\nimages/initrd.addrsize 0x00010408\n",
        )
    _write_file(
        os.path.join(tree, "coreos/kargs.json"),
        json.dumps({"default": DEFAULT_KARGS, "files": kargs_files, "size": KARGS_AREA_SIZE}).encode(),
    )
    _write_file(os.path.join(tree, "coreos/igninfo.json"), json.dumps({"file": "images/ignition.img"}).encode())
    _write_file(
        os.path.join(tree, "coreos/features.json"),
        json.dumps({"installer-config": True, "live-initrd-network-kargs": True}).encode(),
    )
    _write_file(os.path.join(tree, "images/ignition.img"), bytes(EMBED_AREA_SIZE))
    _write_file(os.path.join(tree, "images/pxeboot/vmlinuz"), kernel)
    # The live initrd is itself a compressed cpio archive, so appending the ignition archive to it (PXE)
    # gives a well-formed concatenation.
    _write_file(os.path.join(tree, "images/pxeboot/initrd.img"), initrd)
    _sparse_file(os.path.join(tree, "images/pxeboot/rootfs.img"), filler_bytes)


def _initrd_cpio(arch):
    from .iso import cpio_newc  # late: iso imports this module

    return cpio_newc({"etc/initrd-release": ('NAME="RHEL CoreOS"\nARCH=%s\n' % arch).encode()})


def _make_efi_image(path):
    """A small FAT image for the EFI El Torito entry (zeros if mkfs.vfat is missing:
    xorriso does not look inside it)."""
    _sparse_file(path, 2 * 1024 * 1024)
    mkfs = shutil.which("mkfs.vfat") or shutil.which("mkfs.vfat", path="/usr/sbin:/sbin")
    if mkfs:
        subprocess.run([mkfs, "-n", "EFIBOOT", path], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
