# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark what day2_iso and iso_info do with a ~1 GiB node ISO, each beside a baseline on the same file.

(a) read the ISO (inspect_iso: the ISO 9660 lookup, the embedded Ignition config, the kernel arguments), as
    iso_info and day2_iso do after every build; baseline: ``cat FILE > /dev/null`` (reading all of it).
(b) append the live kernel arguments in place (append_kernel_arguments, with its fsync), as day2_iso does to the
    fetched (and already fsynced) ISO; baseline: ``cp`` of the same file, what a tool that rewrites the ISO pays at
    least.
(c) the sha256 the sidecar records (build.file_sha256); baseline: ``sha256sum FILE``.

Run from the repository root:  .venv/bin/python tests/benchmarks/iso_bench.py [--iso PATH]
Needs xorriso, isolinux and cpio to build the ISO (not with --iso, which must hold an Ignition config); otherwise
only the Python standard library.
"""

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(REPO_ROOT, "tests", "unit", "plugins", "module_utils", "fixtures", "iso")
SERIAL = "console=ttyS0,115200n8"
HOSTS = [{"hostname": "extra-worker-0", "macs": ["52:54:00:6f:00:14"], "interfaces": ["eth0"]}]


def import_collection(workdir):
    """The collection's _image.iso and _image.build, through an ansible_collections tree pointing at this repo."""
    namespace = os.path.join(workdir, "collections", "ansible_collections", "openshift_agent")
    os.makedirs(namespace)
    os.symlink(REPO_ROOT, os.path.join(namespace, "day2"))
    sys.path.insert(0, os.path.join(workdir, "collections"))
    from ansible_collections.openshift_agent.day2.plugins.module_utils._image import build, iso

    return iso, build


def load_fixture(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(FIXTURES, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_node_iso(workdir, path, size_mib, iso_module):
    """A live ISO of ``size_mib`` with node-joiner's Ignition archive (system cpio, gzip) in its embed area."""
    node_layout = load_fixture("node_iso_layout")
    missing = node_layout.live.required_tools() + ([] if shutil.which("cpio") else ["cpio"])
    if missing:
        raise SystemExit("missing %s (run .ci/setup.sh)" % ", ".join(missing))
    node_layout.live.build_live_iso(workdir, path, rootfs_size=max(size_mib - 2, 1) << 20)
    with open(path, "r+b") as handle:
        offset = iso_module.read_layout(handle, path).embed_area[0]
        handle.seek(offset)
        handle.write(node_layout.ignition_archive(node_layout.add_nodes_ignition(hosts=HOSTS)))


def timed(func):
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def shell(*command, stdout=None):
    subprocess.run(command, check=True, stdout=stdout)


def flush(path):
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def cat_to_null(path):
    with open(os.devnull, "wb") as null:
        shell("cat", path, stdout=null)


def median_ms(samples):
    return statistics.median(samples) * 1e3


def report(label, ours, baseline_label, baseline):
    print(
        "%s: median %.2f ms over %d runs (min %.2f, max %.2f)"
        % (label, median_ms(ours), len(ours), min(ours) * 1e3, max(ours) * 1e3)
    )
    print(
        "    baseline %s: median %.2f ms -> ratio %.3f"
        % (baseline_label, median_ms(baseline), statistics.median(ours) / statistics.median(baseline))
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iso", help="existing node ISO (with an Ignition config) to use instead of building one")
    parser.add_argument("--size-mib", type=int, default=1024, help="size of the built ISO (default 1024)")
    parser.add_argument("--runs", type=int, default=21, help="runs of the read benchmark (default 21)")
    parser.add_argument("--copies", type=int, default=5, help="runs of the edit and sha256 benchmarks (default 5)")
    parser.add_argument("--workdir", help="directory for the ISO and its copies (default: a new temp dir)")
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="iso-bench-", dir=args.workdir)
    try:
        iso, build = import_collection(workdir)
        source = os.path.join(workdir, "source.iso")
        if args.iso:
            shutil.copyfile(args.iso, source)
        else:
            seconds = timed(lambda: build_node_iso(workdir, source, args.size_mib, iso))
            print("built %s with xorriso in %.1f s" % (source, seconds))
        if iso.inspect_iso(source)["summary"] is None:
            raise SystemExit("%s holds no Ignition config: give a node ISO" % source)
        print("ISO: %.0f MiB" % (os.path.getsize(source) / 2**20))

        reads = [timed(lambda: iso.inspect_iso(source)) for _run in range(args.runs)]
        cats = [timed(lambda: cat_to_null(source)) for _run in range(args.runs)]
        report("(a) read the ISO (inspect_iso)", reads, "cat FILE > /dev/null", cats)

        work = os.path.join(workdir, "work.iso")
        edits, copies, hashes, sha256sums = [], [], [], []
        for _copy in range(args.copies):
            if os.path.exists(work):
                os.unlink(work)
            copies.append(timed(lambda: shell("cp", source, work)))
            flush(work)  # day2_iso edits a copy it has fsynced already (pod_exec.fetch); so does this
            edits.append(timed(lambda: iso.append_kernel_arguments(work, SERIAL)))
            hashes.append(timed(lambda: build.file_sha256(work)))
            sha256sums.append(timed(lambda: shell("sha256sum", work, stdout=subprocess.DEVNULL)))
        report("(b) append live kernel arguments in place (append_kernel_arguments)", edits, "cp FILE", copies)
        report("(c) sha256 of the ISO (build.file_sha256)", hashes, "sha256sum FILE", sha256sums)
        assert iso.inspect_iso(work)["kargs"].endswith(" " + SERIAL)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
