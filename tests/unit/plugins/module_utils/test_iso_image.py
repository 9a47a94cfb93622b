# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ISO tests on a real hybrid ISO built with xorriso, checked afterwards with xorriso, xz, cpio
and ignition-validate (independent readers of what we write)."""

import importlib.util
import json
import os
import shutil
import stat
import subprocess

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._image import errors as _iso_errors
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import iso as _iso
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import iso9660 as _iso9660
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import iso_layout as _iso_layout
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import kargs as _kargs

_LAYOUT_FILE = os.path.join(os.path.dirname(__file__), "fixtures", "iso", "live_iso_layout.py")
_spec = importlib.util.spec_from_file_location("live_iso_layout", _LAYOUT_FILE)
layout_builder = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layout_builder)

DEFAULT_KARGS = layout_builder.DEFAULT_KARGS
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
        return _iso_layout.read_layout(fp, path)


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
    assert layout.embed_area == _iso9660.Region(int(fields[1]) * 2048, int(fields[3]))
    assert layout.embed_area.length == 256 * 1024
    assert [r.path for r in layout.kargs.regions] == ["isolinux/isolinux.cfg", "EFI/redhat/grub.cfg"]
    assert layout.kargs.default == DEFAULT_KARGS


def test_fresh_iso_has_no_config_and_default_kargs(live_iso):
    assert _iso.read_embedded_ignition(live_iso) is None
    assert _iso.read_kargs(live_iso) == DEFAULT_KARGS
    info = _iso.inspect_iso(live_iso)
    assert info["ignition"] is None and info["summary"] is None
    assert info["kargs"] == info["kargs_default"] == DEFAULT_KARGS


# --- editing into a new file ---------------------------------------------------------------------


@pytest.fixture(scope="session")
def edited(live_iso, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("edited") / "node.x86_64.iso")
    result = _iso.write_edited_iso(live_iso, out, ignition=IGNITION, append_kargs=["console=ttyS0,115200n8"])
    return out, result


def test_edit_reports_the_patched_areas(edited, live_iso):
    result = edited[1]
    layout = _layout(live_iso)
    assert result.changed is True
    assert [(e["what"], e["offset"], e["length"], e["changed"]) for e in result.edits] == [
        ("ignition images/ignition.img", layout.embed_area.offset, layout.embed_area.length, True),
        ("kargs isolinux/isolinux.cfg", layout.kargs.regions[0].offset, 1139, True),
        ("kargs EFI/redhat/grub.cfg", layout.kargs.regions[1].offset, 1139, True),
    ]


def test_edit_round_trip(edited):
    path = edited[0]
    assert _iso.read_embedded_ignition(path) == IGNITION
    assert _iso.read_kargs(path) == DEFAULT_KARGS + " console=ttyS0,115200n8"
    summary = _iso.inspect_iso(path)["summary"]
    assert (summary["cluster_id"], summary["cluster_name"]) == ("abc", "ostest")
    assert summary["hosts"][0]["mac_addresses"] == ["00:02:46:e3:9e:7c"]


def test_edit_leaves_every_other_byte_alone(edited, live_iso):
    path, result = edited
    original, new = _read(live_iso), _read(path)
    assert len(original) == len(new)
    masked_original, masked_new = bytearray(original), bytearray(new)
    for edit in result.edits:
        span = slice(edit["offset"], edit["offset"] + edit["length"])
        masked_original[span] = masked_new[span] = b"\0" * edit["length"]
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


def test_peer_tools_decode_the_extracted_embed_area(edited, tmp_path):
    path = edited[0]
    area = _extract(path, "/images/ignition.img", str(tmp_path / "ignition.img"))
    payload = area.rstrip(b"\0")
    assert payload[6:8] == b"\x00\x01"  # xz check id CRC32
    _run(["xz", "-t"], payload)
    archive = _run(["xz", "-dc"], payload)
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
    kargs = DEFAULT_KARGS + " console=ttyS0,115200n8"
    assert text == prefix + kargs + "\n" + "#" * (1139 - len(kargs) - 1) + suffix


def test_result_mode_defaults_to_0600_and_is_configurable(edited, live_iso, tmp_path):
    path = edited[0]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    other = str(tmp_path / "public.iso")
    _iso.write_edited_iso(live_iso, other, kargs="a b", mode=0o644)
    assert stat.S_IMODE(os.stat(other).st_mode) == 0o644
    assert _iso.read_kargs(other) == "a b"


def test_rewriting_the_same_content_is_unchanged(edited, tmp_path):
    path = edited[0]
    again = str(tmp_path / "again.iso")
    result = _iso.write_edited_iso(path, again, ignition=IGNITION, append_kargs="console=ttyS0,115200n8")
    assert result.changed is False
    assert _read(again) == _read(path)


def test_append_kargs_is_idempotent_on_rerun(live_iso, tmp_path):
    first, second = str(tmp_path / "1.iso"), str(tmp_path / "2.iso")
    _iso.write_edited_iso(live_iso, first, append_kargs=["ip=dhcp", "rd.neednet=1"])
    result = _iso.write_edited_iso(first, second, append_kargs=["rd.neednet=1", "ip=dhcp"])
    assert result.changed is False
    assert _iso.read_kargs(second) == DEFAULT_KARGS + " ip=dhcp rd.neednet=1"


def test_replace_then_append_kargs(live_iso, tmp_path):
    out = str(tmp_path / "out.iso")
    _iso.write_edited_iso(live_iso, out, kargs="  coreos.liveiso=x  ", append_kargs="quiet")
    assert _iso.read_kargs(out) == "coreos.liveiso=x quiet"


def test_destination_is_replaced_atomically(live_iso, tmp_path):
    out = tmp_path / "out.iso"
    out.write_bytes(b"previous build")
    _iso.write_edited_iso(live_iso, str(out), ignition=IGNITION)
    assert _iso.read_embedded_ignition(str(out)) == IGNITION
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.iso"]


def test_edit_in_place(iso_copy):
    result = _iso.edit_iso_in_place(iso_copy, ignition=IGNITION, kargs="x y")
    assert result.changed is True
    assert _iso.read_embedded_ignition(iso_copy) == IGNITION
    assert _iso.read_kargs(iso_copy) == "x y"
    assert _iso.edit_iso_in_place(iso_copy, ignition=IGNITION, kargs="x y").changed is False


def test_reads_gzip_area_written_by_system_tools(iso_copy, tmp_path):
    # node-joiner and assisted-image-service write gzip: emulate them with the system tools
    (tmp_path / "config.ign").write_text(json.dumps(IGNITION))
    archive = _run(["cpio", "-o", "-H", "newc", "--quiet"], b"config.ign\n", cwd=str(tmp_path))
    _overwrite(iso_copy, _layout(iso_copy).embed_area.offset, _run(["gzip", "-c"], archive))
    assert _iso.read_embedded_ignition(iso_copy) == IGNITION


# --- errors ---------------------------------------------------------------------------------------


def _assert_nothing_written(directory, expected_names):
    assert sorted(os.listdir(directory)) == sorted(expected_names)


def test_area_too_small(tmp_path):
    iso = _build(tmp_path, igninfo={"file": "images/ignition.img", "offset": 1024, "length": 64})
    out = str(tmp_path / "out" / "node.iso")
    os.mkdir(os.path.dirname(out))
    with pytest.raises(_iso.CapacityError, match="embed area holds only 64") as info:
        _iso.write_edited_iso(iso, out, ignition=IGNITION)
    assert "images/ignition.img" in str(info.value)
    _assert_nothing_written(os.path.dirname(out), [])


def test_igninfo_offset_and_length_locate_the_area(tmp_path):
    iso = _build(tmp_path, igninfo={"file": "images/ignition.img", "offset": 4096, "length": 8192})
    layout = _layout(iso)
    assert layout.embed_area.length == 8192
    _iso.edit_iso_in_place(iso, ignition=IGNITION)
    with open(iso, "rb") as fp:
        fp.seek(layout.embed_area.offset - 4096)
        before = fp.read(4096)
    assert before == b"\0" * 4096
    assert _iso.read_embedded_ignition(iso) == IGNITION


def test_missing_igninfo(tmp_path):
    iso = _build(tmp_path, skip=("coreos/igninfo.json",))
    with pytest.raises(
        _iso.IsoLayoutError, match=r"coreos/igninfo.json \(igninfo.jso in a node-joiner ISO\) not found"
    ):
        _iso.read_embedded_ignition(iso)


def test_missing_kargs_json_still_allows_ignition_edits(tmp_path):
    iso = _build(tmp_path, skip=("coreos/kargs.json",))
    with pytest.raises(_iso.IsoLayoutError, match=r"coreos/kargs.json \(kargs.jso in a node-joiner ISO\) not found"):
        _iso.read_kargs(iso)
    with pytest.raises(_iso.IsoLayoutError, match="cannot set kernel arguments"):
        _iso.edit_iso_in_place(iso, kargs="a")
    assert _iso.edit_iso_in_place(iso, ignition=IGNITION).changed is True
    assert _iso.inspect_iso(iso)["kargs"] is None


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
    with pytest.raises(_iso.IsoLayoutError, match=message):
        _iso.read_kargs(iso)


def test_kargs_too_long(live_iso, tmp_path):
    with pytest.raises(_iso.CapacityError, match="at most 1138") as info:
        _iso.write_edited_iso(live_iso, str(tmp_path / "out.iso"), kargs="x" * 1139)
    assert "isolinux/isolinux.cfg" in str(info.value)
    _assert_nothing_written(str(tmp_path), [])


def test_kargs_that_just_fit(live_iso, tmp_path):
    out = str(tmp_path / "out.iso")
    _iso.write_edited_iso(live_iso, out, kargs="x" * 1138)
    assert _iso.read_kargs(out) == "x" * 1138


def test_disagreeing_kargs_regions(iso_copy):
    grub = _layout(iso_copy).kargs.regions[1]
    _overwrite(iso_copy, grub.offset, _kargs.format_kargs_region("different", grub.length))
    with pytest.raises(_iso_errors.KargsMismatchError, match="EFI/redhat/grub.cfg has 'different'"):
        _iso.read_kargs(iso_copy)
    with pytest.raises(_iso_errors.KargsMismatchError):
        _iso.edit_iso_in_place(iso_copy, append_kargs="quiet")
    # replacing the kargs outright repairs the regions
    _iso.edit_iso_in_place(iso_copy, kargs="repaired")
    assert _iso.read_kargs(iso_copy) == "repaired"


def test_corrupt_xz_in_the_embed_area(iso_copy):
    _iso.edit_iso_in_place(iso_copy, ignition=IGNITION)
    offset = _layout(iso_copy).embed_area.offset
    _overwrite(iso_copy, offset + 40, b"\xff" * 16)
    with pytest.raises(_iso.EmbedAreaError, match="corrupt xz stream") as info:
        _iso.read_embedded_ignition(iso_copy)
    assert iso_copy in str(info.value) and "images/ignition.img" in str(info.value)


def test_not_an_iso(tmp_path):
    path = tmp_path / "plain.bin"
    path.write_bytes(b"\0" * 70000)
    with pytest.raises(_iso.IsoLayoutError, match="not an ISO 9660 image"):
        _iso.read_kargs(str(path))


@pytest.mark.parametrize("failing", ["apply_patches", "_copy_file_contents"])
def test_failed_write_leaves_destination_untouched(live_iso, tmp_path, monkeypatch, failing):
    out = tmp_path / "node.iso"
    out.write_bytes(b"previous build")

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_iso, failing, fail)
    with pytest.raises(OSError, match="No space left"):
        _iso.write_edited_iso(live_iso, str(out), ignition=IGNITION)
    assert out.read_bytes() == b"previous build"
    _assert_nothing_written(str(tmp_path), ["node.iso"])


def test_failed_write_creates_no_destination(live_iso, tmp_path, monkeypatch):
    def fail_fsync(fd):
        raise OSError(5, "I/O error")

    monkeypatch.setattr(_iso.os, "fsync", fail_fsync)
    with pytest.raises(OSError, match="I/O error"):
        _iso.write_edited_iso(live_iso, str(tmp_path / "node.iso"), kargs="a")
    _assert_nothing_written(str(tmp_path), [])


@pytest.mark.parametrize("unsupported", ["copy_file_range", "sendfile"])
def test_copy_falls_back_when_the_kernel_cannot(live_iso, tmp_path, monkeypatch, unsupported):
    def refuse(*args, **kwargs):
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(_iso.os, unsupported, refuse)
    if unsupported == "sendfile":
        monkeypatch.setattr(_iso.os, "copy_file_range", refuse)
    out = str(tmp_path / "out.iso")
    _iso.write_edited_iso(live_iso, out)
    assert _read(out) == _read(live_iso)
