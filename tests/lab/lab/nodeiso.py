"""What node-joiner writes from the extracted base ISO: the node ISO, the config ISO and the PXE artifacts.

The node ISO is built the way node-joiner builds it (openshift/installer
pkg/asset/agent/image/agentimage.go@e63803a36b43bf74bca84e614403f9be1494a7d6; openshift/assisted-image-service
pkg/isoeditor at a55e383a69c5e0ba00d4ca875e8d2b9ed520efcc):

1. the base ISO's tree is extracted (``xorriso -osirrox``; the installer's ``AgentArtifacts`` asset extracts it);
2. ``images/ignition.img`` is overwritten with the gzip cpio ``config.ign`` (mode 0100644), zero-padded to
   4 bytes, then zeros to the end of the embed area; a too small area grows by quarters of its size, leaving one
   free quarter, and ``coreos/igninfo.json`` then names the new length (``stream.go``, ``ignition_image.go``);
3. extra kernel arguments (``fips=1``) go into the kargs area of every file ``coreos/kargs.json`` lists
   (``kargs.go``);
4. every file whose extension is longer than 3 characters is renamed to 3 characters, in the whole tree, except
   ``boot.catalog`` (``normalizeFilesExtension``): ``coreos/igninfo.jso``, ``coreos/kargs.jso``...;
5. the ISO is rebuilt with Rock Ridge, no Joliet, El Torito chosen from the files present (``isolinux/boot.cat`` +
   ``isolinux/isolinux.bin`` + ``images/efiboot.img``: BIOS + UEFI; only ``images/efiboot.img``: UEFI with the
   hidden catalog ``boot.catalog``, which must exist; ``images/cdboot.img``: the s390x entry), the volume ID of the
   base ISO and no isohybrid MBR/GPT (``isoutil.go`` ``Create``).

PXE artifacts are not renamed (``agentpxefiles.go@84c3bbc9d011c5339af99235decb0f31bea501a7``).

On platform External node-joiner 4.17 writes a minimal ISO (``PersistToFile``, agentimage.go@e63803a3, after step
4; ``profile.external_minimal_iso``), through ``isoeditor.CreateMinimalISO`` as the installer vendors it
(vendor/github.com/openshift/assisted-image-service/pkg/isoeditor/rhcos.go@006d45739349721f1371d3013792d9b8407e9842):
``images/pxeboot/rootfs.img`` removed, a 1 MiB ``images/assisted_installer_custom.img`` placeholder added, every
``linux`` line of the first grub.cfg found gets `` 'coreos.live.rootfs_url=<url>'`` and every ``initrd`` line the
placeholder, ``isolinux/isolinux.cfg`` (not on ppc64le) gets `` coreos.live.rootfs_url=<url>`` on its ``append``
lines and the placeholder after ``initrd=...``; `` coreos.liveiso=...`` is removed from both. ``coreos/kargs.json``
is not touched (renamed ``kargs.jso`` by then in any case): its offsets and size are stale, so on x86_64 the
isolinux area no longer holds the grub area's arguments. An absent isolinux.cfg (the lab's aarch64 and s390x base
ISOs) is skipped here, where the Go code would fail (inferred: assisted-image-service builds aarch64 minimal ISOs).
"""

import gzip
import json
import os
import re
import shutil
import subprocess
import tempfile

from . import iso
from .isobase import X86_64_EL_TORITO

ISO9660_LEVEL1_EXT_LEN = 3
SKIP_RENAME = ("boot.catalog",)
CONFIG_ISO_LABEL = "agent_configimage"
PXE_PREFIX = "node"  # openshift/installer PR #9280 (OCPBUGS-45317): day-2 PXE files are "node.*"
ROOTFS = "images/pxeboot/rootfs.img"
RAMDISK, RAMDISK_SIZE = "images/assisted_installer_custom.img", 1024 * 1024
GRUB_PATHS = ("EFI/redhat/grub.cfg", "EFI/fedora/grub.cfg", "boot/grub/grub.cfg", "EFI/centos/grub.cfg")


class NodeIsoError(Exception):
    """The ISO cannot be built (the message is what node-joiner would report)."""


def _run(cmd):
    proc = subprocess.run(cmd, capture_output=True, check=False)
    if proc.returncode != 0:
        raise NodeIsoError("%s failed (%d): %s" % (cmd[0], proc.returncode, proc.stderr.decode(errors="replace")))


def extract_tree(base_iso, dest):
    """Unpack the base ISO into ``dest`` (created); files keep their Rock Ridge names."""
    os.makedirs(dest, exist_ok=True)
    _run(["xorriso", "-osirrox", "on", "-osirrox", "sparse=1m", "-indev", base_iso, "-extract", "/", dest])
    for root, dirs, files in os.walk(dest):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o755)
        for name in files:
            path = os.path.join(root, name)
            os.chmod(path, os.stat(path).st_mode | 0o200)
    return dest


def write_ignition_image(tree, ignition):
    """Overwrite the embed area of ``tree`` with the gzip cpio of ``ignition``; return the area length."""
    info_path = os.path.join(tree, "coreos", "igninfo.json")
    info = {"file": "images/ignition.img"}
    if os.path.exists(info_path):
        with open(info_path) as handle:
            info = json.load(handle)
    image = os.path.join(tree, info["file"])
    size = os.path.getsize(image)
    offset = info.get("offset") or 0
    length = info.get("length") or size - offset
    payload = iso.ignition_archive(ignition, "gzip")
    if len(payload) > length:
        if offset + length < size:
            raise NodeIsoError("content length (%d) exceeds embed area size (%d)" % (len(payload), length))
        chunk = max(1, length // 4)
        while length - len(payload) < chunk:  # grow by quarters, always one free quarter left
            length += chunk
        with open(info_path, "w") as handle:
            json.dump({"file": info["file"], "offset": offset, "length": length}, handle)
    with open(image, "r+b") as handle:
        handle.seek(offset)
        handle.write(payload + bytes(length - len(payload)))
    return length


def append_kargs(tree, extra):
    """Put the default kernel arguments plus ``extra`` into every kargs area of ``tree``."""
    if not extra:
        return
    with open(os.path.join(tree, "coreos", "kargs.json")) as handle:
        spec = json.load(handle)
    for entry in spec["files"]:
        end, pad = entry.get("end", "\n"), entry.get("pad", "#")
        text = spec["default"] + extra + end
        if len(text) > spec["size"]:
            raise NodeIsoError("kernel arguments too long for the %d-byte area of %s" % (spec["size"], entry["path"]))
        with open(os.path.join(tree, entry["path"]), "r+b") as handle:
            handle.seek(entry["offset"])
            handle.write((text + pad * (spec["size"] - len(text))).encode())


def normalize_extensions(tree):
    """Cut every file extension longer than 3 characters to 3, keeping ``boot.catalog``; return the renames."""
    renamed = []
    for root, _dirs, files in os.walk(tree):
        for name in files:
            stem, ext = os.path.splitext(name)
            if name in SKIP_RENAME or len(ext) <= ISO9660_LEVEL1_EXT_LEN + 1:
                continue
            new = stem + ext[: ISO9660_LEVEL1_EXT_LEN + 1]
            os.rename(os.path.join(root, name), os.path.join(root, new))
            renamed.append((os.path.relpath(os.path.join(root, name), tree), new))
    return renamed


def _exists(tree, path):
    return os.path.isfile(os.path.join(tree, path))


def el_torito_options(tree):
    """The xorriso El Torito options isoeditor.Create would pick from the files present."""
    if all(_exists(tree, p) for p in ("isolinux/boot.cat", "isolinux/isolinux.bin", "images/efiboot.img")):
        os.unlink(os.path.join(tree, "isolinux/boot.cat"))  # the catalog is written anew at that path
        return list(X86_64_EL_TORITO)
    if _exists(tree, "images/efiboot.img"):
        if not _exists(tree, "boot.catalog"):
            raise NodeIsoError("missing boot.catalog file")
        os.unlink(os.path.join(tree, "boot.catalog"))
        return ["-c", "boot.catalog", "--boot-catalog-hide", "-e", "images/efiboot.img", "-no-emul-boot"]
    if _exists(tree, "images/cdboot.img"):
        if _exists(tree, "boot.catalog"):
            os.unlink(os.path.join(tree, "boot.catalog"))
        return ["-c", "boot.catalog", "--boot-catalog-hide", "-b", "images/cdboot.img", "-no-emul-boot"]
    return []


def create_iso(out, tree, volume_label):
    """``isoeditor.Create``: Rock Ridge, no Joliet, El Torito from the tree, no isohybrid, atomic rename."""
    directory = os.path.dirname(os.path.abspath(out))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(out) + ".")
    os.close(fd)
    try:
        _run(
            ["xorriso", "-as", "mkisofs", "-quiet", "-o", tmp, "-V", volume_label, "-R", *el_torito_options(tree), tree]
        )
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return out


def build_node_iso(base_iso, dest, ignition, extra_kargs="", tree=None, minimal=None):
    """Write ``dest`` (``node.<arch>.iso``) from ``base_iso`` with ``ignition`` embedded; return ``dest``.

    ``tree``: an already extracted copy of the base ISO to use (it is modified). ``minimal``: (rootfs URL, arch) for
    platform External's minimal ISO (:func:`make_minimal`, after the renames as in ``PersistToFile``).
    """
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(dest)), prefix=".node-iso-") as work:
        if tree is None:
            tree = extract_tree(base_iso, os.path.join(work, "tree"))
        write_ignition_image(tree, ignition)
        append_kargs(tree, extra_kargs)
        normalize_extensions(tree)
        if minimal:
            make_minimal(tree, *minimal)
        return create_iso(dest, tree, iso.volume_id(base_iso))


def _go_expand(template):
    """``regexp.Expand`` of a Go replacement template: ``$1``, ``${1}``, ``$$``; ``$name`` of a group that does not
    exist (any other word) expands to nothing -- so a ``$`` in the rootfs URL is eaten, as the Go code does."""

    def expand(match):
        def one(ref):
            name = ref.group(2) or ref.group(3)
            return "$" if ref.group(1) == "$" else (match.group(int(name)) or "") if name.isdigit() else ""

        return re.sub(r"\$(\$|\{(\w+)\}|(\w+))", one, template)

    return expand


def _edit(path, pattern, template):
    """``editFile``: every match of ``pattern`` replaced (``ReplaceAllString``, RE2's ASCII classes)."""
    with open(path) as handle:
        content = handle.read()
    with open(path, "w") as handle:
        handle.write(re.sub(pattern, _go_expand(template), content, flags=re.ASCII))


def make_minimal(tree, rootfs_url, arch):
    """``CreateMinimalISO``'s edits of the extracted ``tree`` (the ISO is then created as usual)."""
    os.unlink(os.path.join(tree, ROOTFS))
    with open(os.path.join(tree, RAMDISK), "wb") as handle:
        handle.truncate(RAMDISK_SIZE)
    grub = next((os.path.join(tree, p) for p in GRUB_PATHS if os.path.isfile(os.path.join(tree, p))), None)
    if grub is None:
        raise NodeIsoError("no grub.cfg found, possible paths are [%s]" % " ".join(GRUB_PATHS))
    _edit(grub, r"(?m)^(\s+linux) (.+| )+$", "$1 $2 'coreos.live.rootfs_url=%s'" % rootfs_url)
    _edit(grub, r" coreos.liveiso=\S+", "")
    _edit(grub, r"(?m)^(\s+initrd) (.+| )+$", "$1 $2 /" + RAMDISK)
    isolinux = os.path.join(tree, "isolinux/isolinux.cfg")
    if arch != "ppc64le" and os.path.isfile(isolinux):
        _edit(isolinux, r"(?m)^(\s+append) (.+| )+$", "$1 $2 coreos.live.rootfs_url=" + rootfs_url)
        _edit(isolinux, r" coreos.liveiso=\S+", "")
        _edit(isolinux, r"(?m)^(\s+append.*initrd=\S+) (.*)$", "${1},/%s ${2}" % RAMDISK)


def build_config_iso(dest, files):
    """``agentconfig.noarch.iso``: one file ``config.gz``, the gzip cpio of ``files`` ([(path, bytes, mode)])
    under their absolute paths (openshift/installer pkg/asset/agent/configimage/configiso.go@
    71962a150a4b7c0d078d124908cae77157a0506a, volume label ``agent_configimage``)."""
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(dest)), prefix=".config-iso-") as work:
        with open(os.path.join(work, "config.gz"), "wb") as handle:
            handle.write(gzip.compress(iso.cpio_newc(list(files))))
        return create_iso(dest, work, CONFIG_ISO_LABEL)


def pxe_artifact_names(arch, prefix=PXE_PREFIX):
    """File names node-joiner gives the PXE artifacts of one architecture (in ``boot-artifacts/``)."""
    names = {
        "initrd": "%s.%s-initrd.img" % (prefix, arch),
        "rootfs": "%s.%s-rootfs.img" % (prefix, arch),
        "kernel": "%s.%s-vmlinuz" % (prefix, arch),
        "ipxe": "%s.%s.ipxe" % (prefix, arch),
    }
    if arch == "s390x":
        names.update(addrsize="%s.%s-initrd.addrsize" % (prefix, arch), ins="%s.%s-generic.ins" % (prefix, arch))
    return names


def pxe_kernel_args(tree, extra=""):
    """kargs.json ``default`` without ``coreos.liveiso=...``, plus the extra kernel arguments."""
    with open(os.path.join(tree, "coreos", "kargs.json")) as handle:
        default = json.load(handle)["default"]
    return re.sub(r"coreos\.liveiso=[^ ]+ ?", "", default) + extra


def write_pxe_artifacts(dest_dir, arch, ignition, tree, base_url=None, extra_kargs=""):
    """Write ``dest_dir``/boot-artifacts/ from the extracted base ISO ``tree``; return the directory."""
    out = os.path.join(dest_dir, "boot-artifacts")
    os.makedirs(out, exist_ok=True)
    names = pxe_artifact_names(arch)
    shutil.copyfile(os.path.join(tree, "images/pxeboot/rootfs.img"), os.path.join(out, names["rootfs"]))
    with open(os.path.join(tree, "images/pxeboot/initrd.img"), "rb") as handle:
        initrd = handle.read()
    # isoeditor.NewInitRamFSStreamReader: the live initrd with the ignition archive appended as is.
    initrd = initrd + iso.ignition_archive(ignition, "gzip")
    with open(os.path.join(out, names["initrd"]), "wb") as handle:
        handle.write(initrd)
    with open(os.path.join(tree, "images/pxeboot/vmlinuz"), "rb") as handle:
        kernel = handle.read()
    if arch == "aarch64":
        kernel = gzip.decompress(kernel)
    with open(os.path.join(out, names["kernel"]), "wb") as handle:
        handle.write(kernel)
    if arch == "s390x":
        with open(os.path.join(tree, "images/initrd.addrsize"), "rb") as handle:
            address = handle.read()[:8]
        with open(os.path.join(out, names["addrsize"]), "wb") as handle:
            handle.write(address + len(initrd).to_bytes(8, "big"))
        with open(os.path.join(tree, "generic.ins")) as handle:
            ins = handle.read()
        for old, new in (
            ("kernel.img", names["kernel"]),
            ("initrd.img", names["initrd"]),
            ("initrd.addrsize", names["addrsize"]),
        ):
            ins = ins.replace(old, new)
        with open(os.path.join(out, names["ins"]), "w") as handle:
            handle.write(ins)
    if base_url:  # the URL is used as given: "<url>/<file>"
        script = (
            "#!ipxe\ninitrd --name initrd {b}/{initrd}\n"
            "kernel {b}/{kernel} initrd=initrd coreos.live.rootfs_url={b}/{rootfs} {kargs}\nboot\n"
        ).format(
            b=base_url,
            initrd=names["initrd"],
            kernel=names["kernel"],
            rootfs=names["rootfs"],
            kargs=pxe_kernel_args(tree, extra_kargs),
        )
        with open(os.path.join(out, names["ipxe"]), "w") as handle:
            handle.write(script)
        os.chmod(os.path.join(out, names["ipxe"]), 0o600)
    return out
