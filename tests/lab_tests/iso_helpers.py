"""Shared helpers of the ISO tests: the Ignition config they embed and the real tools they check with."""

import subprocess
import zlib

from lab import ignition as ign

SIZE = 24 * 1024 * 1024  # the base ISO of the ISO tests (conftest.base_iso)
CONFIG = {
    "ignition": {"version": "3.2.0"},
    "storage": {
        "files": [{"path": "/etc/assisted/add-nodes.env", "contents": {"source": ign.data_url("CLUSTER_ID=abc\n")}}]
    },
}


def run(*cmd, **kwargs):
    """Run a real tool (xorriso, cpio, xz); its stdout, or AssertionError with its stderr."""
    proc = subprocess.run(cmd, capture_output=True, check=False, **kwargs)
    assert proc.returncode == 0, "%s failed: %s" % (cmd, proc.stderr.decode())
    return proc.stdout


def xorriso_extract(image, inner, dest):
    run("xorriso", "-osirrox", "on", "-indev", image, "-extract", inner, dest)
    return dest


def xorriso_ls(image, directory):
    return [name.strip("'") for name in run("xorriso", "-indev", image, "-ls", directory).decode().split()]


def el_torito(image):
    report = run("xorriso", "-indev", image, "-report_el_torito", "plain").decode()
    return report, [line.split()[6] for line in report.splitlines() if line.startswith("El Torito boot img")]


def gzip_member(data):
    """The bytes of the first gzip member, so what follows can be checked to be zeros."""
    dec = zlib.decompressobj(wbits=31)
    dec.decompress(data)
    assert dec.eof
    return data[: len(data) - len(dec.unused_data)]
