# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark the ISO codec on a ~1 GiB live ISO.

Prints (a) the median time to read the embedded Ignition config and (b) the time of a
kargs + ignition edit producing a new file against ``cp`` of the same file, as a ratio.

Run from the repository root:  .venv/bin/python tests/benchmarks/iso_bench.py [--iso PATH]
Needs xorriso and isolinux to build the ISO (not with --iso); otherwise only the Python stdlib (the collection
reads ISO 9660 itself, plugins/module_utils/_image/iso9660.py).
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
LAYOUT_FILE = os.path.join(
    REPO_ROOT, "tests", "unit", "plugins", "module_utils", "fixtures", "iso", "live_iso_layout.py"
)
IGNITION = {
    "ignition": {"version": "3.2.0"},
    "storage": {
        "files": [
            {
                "path": "/etc/assisted/add-nodes.env",
                "mode": 420,
                "contents": {"source": "data:,CLUSTER_ID%3Dbench%0ACLUSTER_NAME%3Dbench%0A"},
            }
        ]
    },
}


def import_iso_module(workdir):
    """Import the collection's _iso module through an ansible_collections tree pointing at this repo."""
    namespace = os.path.join(workdir, "collections", "ansible_collections", "openshift_agent")
    os.makedirs(namespace)
    os.symlink(REPO_ROOT, os.path.join(namespace, "day2"))
    sys.path.insert(0, os.path.join(workdir, "collections"))
    from ansible_collections.openshift_agent.day2.plugins.module_utils._image import iso as _iso

    return _iso


def load_layout_builder():
    spec = importlib.util.spec_from_file_location("live_iso_layout", LAYOUT_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(func):
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def drop_file(path):
    if os.path.exists(path):
        os.unlink(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iso", help="existing live ISO to use instead of building one")
    parser.add_argument("--size-mib", type=int, default=1024, help="size of the built ISO (default 1024)")
    parser.add_argument("--runs", type=int, default=21, help="runs of the read benchmark (default 21)")
    parser.add_argument("--copies", type=int, default=5, help="runs of the edit and cp benchmark (default 5)")
    parser.add_argument("--workdir", help="directory for the ISO and its copies (default: a new temp dir)")
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="iso-bench-", dir=args.workdir)
    try:
        iso_module = import_iso_module(workdir)
        source = os.path.join(workdir, "source.iso")
        if args.iso:
            shutil.copyfile(args.iso, source)
        else:
            builder = load_layout_builder()
            missing = builder.required_tools()
            if missing:
                parser.error("missing %s (run .ci/setup.sh)" % ", ".join(missing))
            seconds = timed(
                lambda: builder.build_live_iso(workdir, source, rootfs_size=max(args.size_mib - 2, 1) << 20)
            )
            print("built %s (%.0f MiB) with xorriso in %.1f s" % (source, os.path.getsize(source) / 2**20, seconds))
        if iso_module.read_embedded_config(source) is None:
            iso_module.edit_iso_in_place(source, ignition=IGNITION)
        size_mib = os.path.getsize(source) / 2**20

        reads = [timed(lambda: iso_module.read_embedded_ignition(source)) for run in range(args.runs)]
        print(
            "(a) read embedded config: median %.2f ms over %d runs (min %.2f, max %.2f)"
            % (statistics.median(reads) * 1e3, len(reads), min(reads) * 1e3, max(reads) * 1e3)
        )

        edited, copied = os.path.join(workdir, "edited.iso"), os.path.join(workdir, "copied.iso")
        edit_times, cp_times, cp_sync_times = [], [], []
        for run in range(args.copies):
            drop_file(copied)
            cp_times.append(timed(lambda: subprocess.run(["cp", source, copied], check=True)))
            drop_file(copied)
            # the edit fsyncs its result; "cp + sync FILE" is the like-for-like comparison
            cp_sync_times.append(
                timed(
                    lambda: (
                        subprocess.run(["cp", source, copied], check=True)
                        and subprocess.run(["sync", copied], check=True)
                    )
                )
            )
            drop_file(edited)
            edit_times.append(
                timed(
                    lambda: iso_module.write_edited_iso(
                        source, edited, ignition=IGNITION, append_kargs=["console=ttyS0,115200n8"]
                    )
                )
            )
        edit = statistics.median(edit_times)
        cp, cp_sync = statistics.median(cp_times), statistics.median(cp_sync_times)
        print(
            "(b) edit to a new file (kargs + ignition, copy, fsync, rename): %.0f ms  [%.0f MiB, median of %d]"
            % (edit * 1e3, size_mib, len(edit_times))
        )
        print("    cp: %.0f ms -> ratio edit/cp = %.2f" % (cp * 1e3, edit / cp))
        print("    cp + sync FILE: %.0f ms -> ratio edit/(cp + sync) = %.2f" % (cp_sync * 1e3, edit / cp_sync))
        assert iso_module.read_embedded_ignition(edited) == IGNITION
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
