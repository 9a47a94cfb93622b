# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Codec tests: cpio newc and initramfs streams (archives written by the system cpio, xz and gzip), embed-area
payloads, kernel arguments."""

import gzip
import importlib.util
import json
import lzma
import os
import shutil
import subprocess

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import ignition as _ignition
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import iso as _iso

_spec = importlib.util.spec_from_file_location(
    "node_iso_layout", os.path.join(os.path.dirname(__file__), "fixtures", "iso", "node_iso_layout.py")
)
layout = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layout)

CONFIG = {"ignition": {"version": "3.2.0"}, "storage": {"files": []}}
CONFIG_BYTES = json.dumps(CONFIG).encode()
AREA = 256 * 1024


def _xz(data, check=lzma.CHECK_CRC32):
    return lzma.compress(data, format=lzma.FORMAT_XZ, check=check)


def _padded(data, size=AREA):
    return data + b"\0" * (size - len(data))


def _cpio_of(*files):
    """A newc archive of ``(name, data)`` pairs, written by the system cpio."""
    return layout.cpio_archive(dict(files))


# --- cpio newc -------------------------------------------------------------------------------


@pytest.mark.parametrize("name_len", range(1, 9))
@pytest.mark.parametrize("data_len", [0, 1, 2, 3, 4, 5, 511])
def test_cpio_round_trip_keeps_alignment(name_len, data_len):
    name = "n" * name_len
    data = bytes(range(256)) * 2
    archive = _cpio_of((name, data[:data_len]), ("second", b"xyz"))
    assert archive.startswith(b"070701")
    entries, end = _iso.read_archive(archive)
    assert archive[end:].count(b"\0") == len(archive) - end  # the block padding after the trailer
    assert entries == [
        _iso.CpioEntry(name, 0o100644, data[:data_len]),
        _iso.CpioEntry("second", 0o100644, b"xyz"),
    ]


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda a: b"070707" + a[6:], "bad cpio magic"),
        (lambda a: a[:50], "truncated cpio header"),
        (lambda a: a[:6] + b"ZZZZZZZZ" + a[14:], "non-hex"),
        (lambda a: a[:140], "data bytes expected"),
        (lambda a: a[:115], "cpio entry name at offset 0 is truncated, empty or not NUL-terminated"),
        (lambda a: a[:120] + b"x" + a[121:], "not NUL-terminated"),
    ],
)
def test_cpio_rejects_malformed(mutate, message):
    archive = _cpio_of(("config.ign", b"x" * 64))
    with pytest.raises(_iso.CpioError, match=message):
        _iso.read_archive(mutate(archive))


# --- embed area payload ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "encode",
    [
        pytest.param(_xz, id="xz-crc32"),
        pytest.param(lambda archive: _xz(archive, lzma.CHECK_CRC64), id="xz-crc64"),
        pytest.param(gzip.compress, id="gzip"),
        pytest.param(lambda archive: archive, id="uncompressed"),
    ],
)
def test_reads_every_supported_encoding(encode):
    area = _padded(encode(_cpio_of(("config.ign", CONFIG_BYTES))))
    assert _iso.extract_config(area) == CONFIG_BYTES


def test_reads_concatenated_archives_with_nul_padding_later_wins():
    first = _xz(_cpio_of(("config.ign", b'{"old": 1}'), ("etc/x", b"1")))
    second = gzip.compress(_cpio_of(("./config.ign", CONFIG_BYTES)))
    third = _cpio_of(("other", b"2"))
    head = first + b"\0" * 4 + second
    area = _padded(head + b"\0" * (8 + (-len(head) % 4)) + third)
    files = _iso.unpack_initramfs(area)
    assert sorted(files) == ["config.ign", "etc/x", "other"]
    assert _iso.extract_config(area) == CONFIG_BYTES


def test_reads_concatenated_archives_inside_one_stream():
    inner = _cpio_of(("a", b"1")) + b"\0" * 512 + _cpio_of(("config.ign", CONFIG_BYTES))
    assert _iso.extract_config(_padded(_xz(inner))) == CONFIG_BYTES


def test_all_zero_area_means_no_config():
    assert _iso.unpack_initramfs(b"\0" * AREA) is None
    assert _iso.extract_config(b"\0" * AREA) is None


def test_archive_without_config_ign_has_no_config():
    assert _iso.extract_config(_padded(_xz(_cpio_of(("etc/other", b"1"))))) is None


def _corrupt_xz():
    good = bytearray(_xz(_cpio_of(("config.ign", CONFIG_BYTES))))
    good[len(good) // 2] ^= 0xFF
    return bytes(good)


@pytest.mark.parametrize(
    "area, message",
    [
        pytest.param(_corrupt_xz(), "corrupt xz stream", id="corrupt-xz"),
        # a cut stream is followed by the area's zero fill, which the decoder sees as corrupt data
        pytest.param(_xz(b"x" * 1000)[:30], "corrupt xz stream", id="truncated-xz"),
        pytest.param(gzip.compress(_cpio_of(("config.ign", CONFIG_BYTES)))[:-12], "corrupt gzip", id="truncated-gzip"),
        pytest.param(b"\x28\xb5\x2f\xfd" + b"1" * 20, "unsupported zstd", id="zstd"),
        pytest.param(b"garbage!", "unrecognised data", id="garbage"),
        pytest.param(_cpio_of(("config.ign", CONFIG_BYTES))[:200], "non-hex cpio header", id="truncated-cpio"),
        pytest.param(b"\0" + _cpio_of(("config.ign", CONFIG_BYTES)), "not 4-byte aligned", id="unaligned-cpio"),
        pytest.param(_xz(gzip.compress(b"x")), "nested", id="nested-compression"),
    ],
)
def test_rejects_undecodable_area(area, message):
    with pytest.raises(_ignition.EmbedAreaError, match=message):
        _iso.extract_config(_padded(area))


def test_error_hierarchy_has_one_root():
    for cls in (
        _ignition.IsoLayoutError,
        _ignition.EmbedAreaError,
        _ignition.CapacityError,
        _ignition.KargsMismatchError,
        _ignition.IgnitionContentError,
        _iso.CpioError,
    ):
        assert issubclass(cls, _ignition.IsoError)
    assert issubclass(_iso.CpioError, _ignition.EmbedAreaError)
    assert issubclass(_ignition.IsoError, Day2Error)


# --- peers: the system cpio, xz and gzip ------------------------------------------------------


def _run(cmd, data=None, cwd=None):
    return subprocess.run(cmd, input=data, cwd=cwd, check=True, capture_output=True).stdout


@pytest.fixture(scope="module")
def system_tools():
    missing = [tool for tool in ("cpio", "xz", "gzip") if shutil.which(tool) is None]
    assert not missing, "setup must install %s (.ci/setup.sh)" % ", ".join(missing)


@pytest.fixture
def gnu_cpio_archive(tmp_path, system_tools):
    (tmp_path / "config.ign").write_bytes(CONFIG_BYTES)
    return _run(["cpio", "-o", "-H", "newc", "--quiet"], b"config.ign\n", cwd=str(tmp_path))


@pytest.mark.parametrize(
    "compressor",
    [
        ["xz", "--check=crc32", "--format=xz", "-c"],
        ["gzip", "-c"],
        ["cat"],
    ],
)
def test_reads_archives_written_by_system_tools(gnu_cpio_archive, compressor):
    area = _padded(_run(compressor, gnu_cpio_archive))
    assert _iso.extract_config(area) == CONFIG_BYTES


# --- kernel arguments ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, pad, end, expected",
    [
        (b"a b\n####", "#", "\n", "a b"),
        (b"a b\n\n##", "#", "\n", "a b"),
        (b"  a  b \n#", "#", "\n", "a  b"),
        (b"a=#1\n####", "#", "\n", "a=#1"),
        (b"a b;    ", " ", ";", "a b"),
        (b"\n######", "#", "\n", ""),
    ],
)
def test_parse_kargs_region(raw, pad, end, expected):
    assert _iso.parse_kargs_region(raw, pad, end) == expected


@pytest.mark.parametrize(
    "kargs, size, pad, end, expected",
    [
        ("a b", 8, "#", "\n", b"a b\n####"),
        (" a b ", 8, "#", "\n", b"a b\n####"),
        ("a b", 4, "#", "\n", b"a b\n"),
        ("", 3, "#", "\n", b"\n##"),
        ("a", 5, " ", ";", b"a;   "),
    ],
)
def test_format_kargs_region(kargs, size, pad, end, expected):
    formatted = _iso.format_kargs_region(kargs, size, pad, end)
    assert formatted == expected
    assert _iso.parse_kargs_region(formatted, pad, end) == kargs.strip()


def test_format_kargs_refuses_too_long():
    with pytest.raises(_ignition.CapacityError, match="at most 3"):
        _iso.format_kargs_region("abcd", 4)


def test_non_utf8_kargs_region():
    with pytest.raises(_ignition.IsoLayoutError, match="UTF-8"):
        _iso.parse_kargs_region(b"\xff\xfe\n###")


@pytest.mark.parametrize(
    "kargs, expected",
    [
        ("a b  c", ["a", "b", "c"]),
        ('a foo="x y" b', ["a", 'foo="x y"', "b"]),
        ('"quoted all" z', ['"quoted all"', "z"]),
        ("", []),
        (" \t\n", []),
    ],
)
def test_split_kargs(kargs, expected):
    assert _iso.split_kargs(kargs) == expected


@pytest.mark.parametrize(
    "current, additions, expected",
    [
        ("a b", "c", "a b c"),
        ("a b", "c d e", "a b c d e"),
        ("a b c", "c b", "a b c"),
        ("a", "c c", "a c"),
        ("a", 'x="1 2"', 'a x="1 2"'),
        ("", "ip=dhcp", "ip=dhcp"),
        ("console=tty0", "console=ttyS0", "console=tty0 console=ttyS0"),
    ],
)
def test_merge_kargs(current, additions, expected):
    merged = _iso.merge_kargs(current, additions)
    assert merged == expected
    assert _iso.merge_kargs(merged, additions) == merged


# --- streams cut short ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, message",
    [
        (_xz(b"x" * 1000)[:30], "truncated xz stream"),
        (gzip.compress(b"x" * 1000, mtime=0)[:-12], "truncated gzip stream"),
    ],
)
def test_stream_cut_at_the_end_of_the_area(data, message):
    with pytest.raises(_ignition.EmbedAreaError, match=message):
        _iso.extract_config(data)
