"""The exec command interpreter of the lab's simulated containers."""

import hashlib
import io
import subprocess
import tarfile
import tracemalloc

import pytest
from lab import shell

REPORT = b'{"id": "report-addnodes-202410090804", "result": null}\n'


@pytest.fixture
def box(tmp_path):
    (tmp_path / "assets" / "boot-artifacts").mkdir(parents=True)
    (tmp_path / "config").mkdir()
    (tmp_path / "release-manifests").mkdir()
    (tmp_path / "assets" / "report.json").write_bytes(REPORT)
    (tmp_path / "assets" / "exit_code").write_bytes(b"0")
    (tmp_path / "assets" / "node.x86_64.iso").write_bytes(bytes(range(256)) * 40)
    (tmp_path / "assets" / "boot-artifacts" / "agent.x86_64.ipxe").write_text("#!ipxe\n")
    (tmp_path / "config" / "nodes-config.yaml").write_text("hosts: []\n")
    return shell.Container(str(tmp_path))


def run(box, command):
    res = box.execute(command)
    chunks = list(res.stdout)
    assert all(len(c) <= shell.CHUNK for c in chunks)
    return b"".join(chunks), res.stderr.decode(), res.exit_code


def test_cat(box):
    assert run(box, ["cat", "/assets/report.json"]) == (REPORT, "", 0)
    assert run(box, "cat assets/exit_code") == (b"0", "", 0)


def test_cat_missing_and_directory(box):
    assert run(box, ["cat", "/assets/nope"]) == (b"", "cat: /assets/nope: No such file or directory\n", 1)
    assert run(box, ["cat", "/assets"]) == (b"", "cat: /assets: Is a directory\n", 1)
    out, err, code = run(box, ["cat", "/assets/exit_code", "/assets/nope"])
    assert (out, code) == (b"0", 1) and "No such file" in err


def test_sha256sum(box, tmp_path):
    digest = hashlib.sha256((tmp_path / "assets" / "node.x86_64.iso").read_bytes()).hexdigest()
    assert run(box, ["sha256sum", "/assets/node.x86_64.iso"]) == (
        ("%s  /assets/node.x86_64.iso\n" % digest).encode(),
        "",
        0,
    )
    assert run(box, ["sha256sum", "/x"]) == (b"", "sha256sum: /x: No such file or directory\n", 1)


def test_ls(box):
    assert run(box, ["ls", "/assets"]) == (b"boot-artifacts\nexit_code\nnode.x86_64.iso\nreport.json\n", "", 0)
    out, err, code = run(box, ["ls", "-l", "/assets/boot-artifacts"])
    assert err == ""
    lines = out.decode().splitlines()
    assert code == 0 and lines[0].startswith("total ")
    assert lines[1].startswith("-rw-") and lines[1].split()[4] == "7" and lines[1].endswith(" agent.x86_64.ipxe")
    assert run(box, ["ls", "/nope"]) == (b"", "ls: cannot access '/nope': No such file or directory\n", 2)


def test_test_and_stat(box):
    assert run(box, ["test", "-f", "/assets/report.json"])[2] == 0
    assert run(box, ["test", "-f", "/assets/missing"])[2] == 1
    assert run(box, ["test", "-f", "/assets"])[2] == 1
    assert run(box, ["[", "-d", "/assets", "]"])[2] == 0
    assert run(box, ["stat", "-c", "%s", "/assets/node.x86_64.iso"]) == (b"10240\n", "", 0)
    assert run(box, ["stat", "-c", "%s", "/nope"]) == (
        b"",
        "stat: cannot statx '/nope': No such file or directory\n",
        1,
    )


def test_head_and_dd_ranges(box, tmp_path):
    data = (tmp_path / "assets" / "node.x86_64.iso").read_bytes()
    assert run(box, ["head", "-c", "100", "/assets/node.x86_64.iso"])[0] == data[:100]
    out, err, code = run(box, ["dd", "if=/assets/node.x86_64.iso", "bs=1024", "skip=2", "count=3"])
    assert (out, code) == (data[2048:5120], 0)
    assert err.startswith("3+0 records in\n3+0 records out\n3072 bytes")
    out = run(box, ["dd", "if=/assets/node.x86_64.iso", "bs=1K", "skip=9", "count=5"])[0]
    assert out == data[9216:]
    out, err = run(
        box,
        [
            "dd",
            "if=/assets/node.x86_64.iso",
            "iflag=skip_bytes,count_bytes",
            "skip=10",
            "count=7",
            "bs=1M",
            "status=none",
        ],
    )[:2]
    assert (out, err) == (data[10:17], "")
    assert run(box, ["dd", "if=/nope", "bs=1"])[1:] == ("dd: failed to open '/nope': No such file or directory\n", 1)


def test_dd_matches_coreutils(box, tmp_path):
    args = ["bs=4096", "skip=1", "count=1"]
    real = subprocess.run(
        ["dd", "if=" + str(tmp_path / "assets" / "node.x86_64.iso"), *args],
        capture_output=True,
        check=False,
    )
    out, err, code = run(box, ["dd", "if=/assets/node.x86_64.iso", *args])
    assert out == real.stdout and code == real.returncode
    assert err.splitlines()[:2] == real.stderr.decode().splitlines()[:2]


def test_tar_stream_is_read_by_gnu_tar_and_tarfile(box, tmp_path):
    out, err, code = run(box, ["tar", "cf", "-", "-C", "/assets", "boot-artifacts", "report.json"])
    assert (err, code) == ("", 0) and len(out) % 10240 == 0
    listing = subprocess.run(["tar", "tf", "-"], input=out, stdout=subprocess.PIPE, check=True).stdout.decode()
    assert listing.split() == ["boot-artifacts/", "boot-artifacts/agent.x86_64.ipxe", "report.json"]
    with tarfile.open(fileobj=io.BytesIO(out)) as archive:
        assert archive.extractfile("report.json").read() == REPORT


def test_tar_errors(box):
    out, err, code = run(box, ["tar", "cf", "-", "-C", "/assets", "report.json", "missing"])
    assert code == 2 and "tar: missing: Cannot stat: No such file or directory" in err
    with tarfile.open(fileobj=io.BytesIO(out)) as archive:
        assert archive.getnames() == ["report.json"]
    assert run(box, ["tar", "cf", "-", "-C", "/nowhere", "x"])[1:] == (
        "tar: /nowhere: Cannot open: No such file or directory\ntar: Error is not recoverable: exiting now\n",
        2,
    )


def test_sh_c(box):
    assert run(box, ["sh", "-c", "cat /assets/report.json"]) == (REPORT, "", 0)
    assert run(box, ["/bin/sh", "-c", "cat /assets/missing 2>/dev/null || true"]) == (b"", "", 0)
    assert run(box, ["sh", "-c", "test -f /assets/exit_code && cat /assets/exit_code"]) == (b"0", "", 0)
    assert run(box, ["sh", "-c", "test -f /assets/none && cat /assets/exit_code"]) == (b"", "", 1)
    assert run(box, ["sh", "-c", "true"]) == (b"", "", 0)


def test_unknown_commands_exit_127(box):
    out, err, code = run(box, ["rsync", "--server"])
    assert (out, code) == (b"", 127) and 'exec: "rsync": executable file not found in $PATH' in err
    assert run(box, ["sh", "-c", "rsync --version"]) == (b"", "sh: 1: rsync: not found\n", 127)


def test_paths_cannot_leave_the_root(box, tmp_path):
    (tmp_path.parent / "outside.txt").write_text("secret")
    try:
        out, err, code = run(box, ["cat", "/../outside.txt"])
        assert code == 1 and out == b"" and err == "cat: /../outside.txt: No such file or directory\n"
    finally:
        (tmp_path.parent / "outside.txt").unlink()


def test_streams_100_mib_without_loading_it(box, tmp_path):
    size = 100 * 1024 * 1024
    with open(str(tmp_path / "assets" / "big.img"), "wb") as f:
        f.truncate(size)
    tracemalloc.start()
    try:
        res = box.execute(["cat", "/assets/big.img"])
        assert res.exit_code == 0
        total = chunks = 0
        digest = hashlib.sha256()
        for chunk in res.stdout:
            assert len(chunk) <= shell.CHUNK
            digest.update(chunk)
            total += len(chunk)
            chunks += 1
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert total == size and chunks == size // shell.CHUNK
    assert digest.hexdigest() == hashlib.sha256(bytes(size)).hexdigest()
    assert peak < 8 * 1024 * 1024, "peak memory %d bytes" % peak
