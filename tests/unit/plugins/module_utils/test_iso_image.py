# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ISO tests on a real hybrid ISO built with xorriso, its Ignition written by the system cpio: what the collection
reads, and its one edit (appending live kernel arguments in place), checked afterwards with xorriso, gzip, cpio and
ignition-validate (independent readers)."""

import importlib.util
import json
import os
import shutil
import subprocess

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._image import ignition as _ignition
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import iso as _iso

_FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "iso")
_spec = importlib.util.spec_from_file_location("node_iso_layout", os.path.join(_FIXTURES, "node_iso_layout.py"))
node_layout = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(node_layout)
layout_builder = node_layout.live

DEFAULT_KARGS = layout_builder.DEFAULT_KARGS
SERIAL = "console=ttyS0,115200n8"
IGNITION = {
    "ignition": {"version": "3.2.0"},
    "storage": {
        "files": [
            {
                "path": "/etc/assisted/add-nodes.env",
                "mode": 420,
                "overwrite": True,
                "contents": {"source": "data:,CLUSTER_ID%3Dabc%0ACLUSTER_NAME%3Dostest%0A"},
            },
            {
                "path": "/etc/assisted/network/host0/mac_interface.ini",
                "mode": 384,
                "overwrite": True,
                "contents": {"source": "data:,00:02:46:e3:9e:7c%3Deth0%0A"},
            },
        ]
    },
}


def _run(cmd, data=None, cwd=None):
    return subprocess.run(cmd, input=data, cwd=cwd, check=True, capture_output=True).stdout


@pytest.fixture(scope="session")
def tools():
    missing = layout_builder.required_tools()
    missing += [tool for tool in ("xz", "cpio", "gzip", "ignition-validate") if shutil.which(tool) is None]
    assert not missing, "setup must install %s (.ci/setup.sh)" % ", ".join(missing)


@pytest.fixture(scope="session")
def live_iso(tmp_path_factory, tools):
    """A pristine hybrid live ISO, built once per session; tests must not modify it."""
    workdir = tmp_path_factory.mktemp("live-iso")
    path = str(workdir / "live.iso")
    layout_builder.build_live_iso(str(workdir), path)
    os.chmod(path, 0o444)
    return path


@pytest.fixture
def iso_copy(live_iso, tmp_path):
    path = str(tmp_path / "copy.iso")
    shutil.copyfile(live_iso, path)
    return path


def _build(tmp_path, **kwargs):
    path = str(tmp_path / "variant.iso")
    layout_builder.build_live_iso(str(tmp_path), path, **kwargs)
    return path


def _layout(path):
    with open(path, "rb") as fp:
        return _iso.read_layout(fp, path)


def _extract(iso_path, iso_file, out):
    _run(["xorriso", "-osirrox", "on", "-indev", iso_path, "-extract", iso_file, out])
    with open(out, "rb") as handle:
        return handle.read()


def _read(path):
    with open(path, "rb") as handle:
        return handle.read()


def _overwrite(path, offset, data):
    with open(path, "r+b") as handle:
        handle.seek(offset)
        handle.write(data)


# --- locating ---------------------------------------------------------------------------------


def test_layout_agrees_with_xorriso(live_iso):
    layout = _layout(live_iso)
    report = _run(
        ["xorriso", "-indev", live_iso, "-find", "/images/ignition.img", "-exec", "report_lba", "--"]
    ).decode()
    # "File data lba:  0 , <start lba> , <blocks> , <bytes> , '/images/ignition.img'"
    fields = [field.strip() for field in report.split("File data lba:")[1].split(",")]
    assert layout.embed_file == "images/ignition.img"
    assert layout.embed_area == (int(fields[1]) * 2048, int(fields[3]))
    assert layout.embed_area[1] == 256 * 1024
    assert [r.path for r in layout.regions] == ["isolinux/isolinux.cfg", "EFI/redhat/grub.cfg"]
    assert layout.kargs_default == DEFAULT_KARGS


def _embed(path, ignition=None, compression="gzip"):
    """Write ``ignition`` into the embed area of the ISO at ``path`` as node-joiner does (system cpio, gzip)."""
    ignition = IGNITION if ignition is None else ignition
    _overwrite(path, _layout(path).embed_area[0], node_layout.ignition_archive(ignition, compression))


def _kargs_of(path):
    return _iso.inspect_iso(path)["kargs"]


def test_fresh_iso_has_no_config_and_default_kargs(live_iso):
    info = _iso.inspect_iso(live_iso)
    assert info["ignition"] is None and info["summary"] is None
    assert info["kargs"] == info["kargs_default"] == DEFAULT_KARGS


# --- appending kernel arguments in place -----------------------------------------------------------------


@pytest.fixture(scope="session")
def embedded(live_iso, tmp_path_factory):
    """The live ISO with an Ignition config, as node-joiner hands it over (before any kernel argument is added)."""
    path = str(tmp_path_factory.mktemp("embedded") / "node.x86_64.iso")
    shutil.copyfile(live_iso, path)
    _embed(path)
    os.chmod(path, 0o444)
    return path


@pytest.fixture(scope="session")
def edited(embedded, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("edited") / "node.x86_64.iso")
    shutil.copyfile(embedded, path)
    os.chmod(path, 0o600)
    changed = _iso.append_kernel_arguments(path, SERIAL)
    return path, changed


def test_append_reports_a_change(edited, embedded):
    path, changed = edited
    assert changed is True
    assert _kargs_of(embedded) == DEFAULT_KARGS and _kargs_of(path) == DEFAULT_KARGS + " " + SERIAL


def test_appending_the_same_again_changes_nothing(edited, tmp_path):
    path = edited[0]
    again = str(tmp_path / "again.iso")
    shutil.copyfile(path, again)
    assert _iso.append_kernel_arguments(again, SERIAL) is False
    assert _read(again) == _read(path)


def test_edit_round_trip(edited):
    path = edited[0]
    info = _iso.inspect_iso(path)
    assert info["ignition"] == IGNITION
    assert info["kargs"] == DEFAULT_KARGS + " " + SERIAL
    assert (info["summary"]["cluster_id"], info["summary"]["cluster_name"]) == ("abc", "ostest")
    assert info["summary"]["hosts"][0]["mac_addresses"] == ["00:02:46:e3:9e:7c"]


def test_edit_leaves_every_other_byte_alone(edited, embedded):
    path = edited[0]
    original, new = _read(embedded), _read(path)
    assert len(original) == len(new)
    masked_original, masked_new = bytearray(original), bytearray(new)
    for region in _layout(embedded).regions:
        span = slice(region.offset, region.offset + region.length)
        assert masked_original[span] != masked_new[span]
        masked_original[span] = masked_new[span] = b"\0" * region.length
    assert masked_original == masked_new
    # explicitly: the hybrid MBR, the GPT header and entries, the volume descriptors
    assert new[:512] == original[:512]
    assert new[512 : 512 + 16 * 1024] == original[512 : 512 + 16 * 1024]
    assert new[16 * 2048 : 20 * 2048] == original[16 * 2048 : 20 * 2048]


@pytest.mark.parametrize("report", ["-report_el_torito", "-report_system_area"])
def test_xorriso_sees_the_same_boot_records(edited, live_iso, report):
    path = edited[0]
    assert _run(["xorriso", "-indev", path, report, "plain"]) == _run(
        ["xorriso", "-indev", live_iso, report, "plain"]
    ).replace(live_iso.encode(), path.encode())


def test_peer_tools_decode_the_embed_area_after_the_edit(edited, tmp_path):
    path = edited[0]
    area = _extract(path, "/images/ignition.img", str(tmp_path / "ignition.img"))
    unzipped = subprocess.run(["gzip", "-dc"], input=area, capture_output=True, check=False)
    assert unzipped.returncode in (0, 2)  # 2: "trailing garbage ignored", the area's zero fill
    archive = unzipped.stdout
    assert _run(["cpio", "-t", "--quiet"], archive) == b"config.ign\n"
    _run(["cpio", "-i", "--quiet"], archive, cwd=str(tmp_path))
    config = tmp_path / "config.ign"
    assert json.loads(config.read_text()) == IGNITION
    _run(["ignition-validate", str(config)])


@pytest.mark.parametrize(
    "iso_file, prefix, suffix",
    [
        ("/isolinux/isolinux.cfg", layout_builder.ISOLINUX_PREFIX, layout_builder.ISOLINUX_SUFFIX),
        ("/EFI/redhat/grub.cfg", layout_builder.GRUB_PREFIX, layout_builder.GRUB_SUFFIX),
    ],
)
def test_peer_reads_back_the_kargs_regions(edited, tmp_path, iso_file, prefix, suffix):
    path = edited[0]
    text = _extract(path, iso_file, str(tmp_path / "cfg")).decode()
    kargs = DEFAULT_KARGS + " " + SERIAL
    assert text == prefix + kargs + "\n" + "#" * (1139 - len(kargs) - 1) + suffix


def test_append_kargs_is_idempotent_in_any_order(iso_copy):
    assert _iso.append_kernel_arguments(iso_copy, "ip=dhcp rd.neednet=1") is True
    assert _iso.append_kernel_arguments(iso_copy, "rd.neednet=1 ip=dhcp") is False
    assert _kargs_of(iso_copy) == DEFAULT_KARGS + " ip=dhcp rd.neednet=1"


def test_append_to_an_iso_without_config(iso_copy):
    assert _iso.append_kernel_arguments(iso_copy, "quiet") is True
    info = _iso.inspect_iso(iso_copy)
    assert info["kargs"] == DEFAULT_KARGS + " quiet" and info["ignition"] is None


def test_reads_gzip_area_written_by_system_tools(iso_copy, tmp_path):
    # node-joiner and assisted-image-service write gzip: emulate them with the system tools
    (tmp_path / "config.ign").write_text(json.dumps(IGNITION))
    archive = _run(["cpio", "-o", "-H", "newc", "--quiet"], b"config.ign\n", cwd=str(tmp_path))
    _overwrite(iso_copy, _layout(iso_copy).embed_area[0], _run(["gzip", "-c"], archive))
    assert _iso.inspect_iso(iso_copy)["ignition"] == IGNITION


# --- errors ---------------------------------------------------------------------------------------


def test_igninfo_offset_and_length_locate_the_area(tmp_path):
    iso = _build(tmp_path, igninfo={"file": "images/ignition.img", "offset": 4096, "length": 8192})
    layout = _layout(iso)
    assert layout.embed_area[1] == 8192
    _embed(iso)
    with open(iso, "rb") as fp:
        fp.seek(layout.embed_area[0] - 4096)
        before = fp.read(4096)
    assert before == b"\0" * 4096
    assert _iso.inspect_iso(iso)["ignition"] == IGNITION


def test_missing_igninfo(tmp_path):
    iso = _build(tmp_path, skip=("coreos/igninfo.json",))
    with pytest.raises(
        _ignition.IsoLayoutError, match=r"coreos/igninfo.json \(igninfo.jso in a node-joiner ISO\) not found"
    ):
        _iso.inspect_iso(iso)


def test_missing_kargs_json_is_read_but_takes_no_kernel_arguments(tmp_path):
    iso = _build(tmp_path, skip=("coreos/kargs.json",))
    _embed(iso)
    info = _iso.inspect_iso(iso)
    assert info["kargs"] is None and info["ignition"] == IGNITION
    before = _read(iso)
    with pytest.raises(
        _ignition.IsoLayoutError,
        match=r"coreos/kargs.json \(kargs.jso in a node-joiner ISO\) not found; cannot set kernel arguments",
    ):
        _iso.append_kernel_arguments(iso, "a")
    assert _read(iso) == before


@pytest.mark.parametrize(
    "kargs_info, message",
    [
        ({"default": "a", "files": [{"path": "isolinux/isolinux.cfg", "offset": 10}], "size": 99999}, "size"),
        ({"default": "a", "files": [], "size": 10}, "non-empty list"),
        ({"default": "a", "files": [{"path": "isolinux/nope.cfg", "offset": 0}], "size": 10}, "not found"),
        ({"default": "a", "files": [{"path": "isolinux/isolinux.cfg", "offset": 999999}], "size": 10}, "runs past"),
        ({"default": "a", "files": [{"path": "isolinux/isolinux.cfg", "offset": 0, "pad": "##"}], "size": 10}, "pad"),
        ({"default": "a" * 20, "files": [{"path": "isolinux/isolinux.cfg", "offset": 0}], "size": 10}, "larger"),
        ({"default": "a", "files": [{"path": "isolinux/isolinux.cfg"}], "size": 10}, "offset"),
    ],
)
def test_bad_kargs_json(tmp_path, kargs_info, message):
    iso = _build(tmp_path, kargs_info=kargs_info)
    with pytest.raises(_ignition.IsoLayoutError, match=message):
        _iso.inspect_iso(iso)


def test_kargs_too_long_write_nothing(iso_copy):
    before = _read(iso_copy)
    with pytest.raises(_ignition.CapacityError, match="at most 1138") as info:
        _iso.append_kernel_arguments(iso_copy, "x" * (1138 - len(DEFAULT_KARGS)))
    assert "isolinux/isolinux.cfg" in str(info.value)
    assert _read(iso_copy) == before


def test_kargs_that_just_fit(iso_copy):
    _iso.append_kernel_arguments(iso_copy, "x" * (1138 - len(DEFAULT_KARGS) - 1))
    assert len(_kargs_of(iso_copy)) == 1138


def test_disagreeing_kargs_regions(iso_copy):
    grub = _layout(iso_copy).regions[1]
    _overwrite(iso_copy, grub.offset, _iso.format_kargs_region("different", grub.length))
    with open(iso_copy, "rb") as handle, pytest.raises(_ignition.KargsMismatchError, match=r"grub\.cfg has 'diff"):
        _iso.read_layout(handle, iso_copy)
    assert _iso.inspect_iso(iso_copy)["kargs"] is None  # a reader tells what it can (node-joiner's minimal ISO)
    before = _read(iso_copy)
    with pytest.raises(_ignition.KargsMismatchError):
        _iso.append_kernel_arguments(iso_copy, "quiet")
    assert _read(iso_copy) == before


def test_corrupt_xz_in_the_embed_area(iso_copy):
    _embed(iso_copy, compression="xz")
    assert _iso.inspect_iso(iso_copy)["embed_area"]["compression"] == ["xz"]
    offset = _layout(iso_copy).embed_area[0]
    _overwrite(iso_copy, offset + 40, b"\xff" * 16)
    with pytest.raises(_ignition.EmbedAreaError, match="corrupt xz stream") as info:
        _iso.inspect_iso(iso_copy)
    assert iso_copy in str(info.value) and "images/ignition.img" in str(info.value)


def test_not_an_iso(tmp_path):
    path = tmp_path / "plain.bin"
    path.write_bytes(b"\0" * 70000)
    with pytest.raises(_ignition.IsoLayoutError, match="not an ISO 9660 image"):
        _iso.inspect_iso(str(path))
