"""Build the release tarball as a user does and check what it holds.

``ansible-galaxy collection build`` into a temporary directory, then: nothing of the lab, of the tests that need it
(tests/lab_tests, tests/slow, tests/integration, tests/benchmarks), of the tests that need the repository's
.collections link (tests/mutation) or of the developer tooling (.ci, Makefile, pyproject.toml, requirements-dev.txt,
any dot file or directory: linter settings, tool caches) is in it; every Python
file in it imports only what the tarball itself, the standard library or its declared requirements provide (no
``lab``); every module's version_added is at most galaxy.yml's version. Prints the file count and exits 1 on a
problem. With ``--keep DIR`` the tarball is left in DIR (tests/integration/test_examples.py installs it from there
and runs the shipped examples and the documents' snippets with it against the lab).
"""

import ast
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
REFUSED = (
    "tests/lab/",
    "tests/lab_tests/",
    "tests/slow/",
    "tests/integration/",
    "tests/benchmarks/",
    "tests/mutation/",
    ".ci/",
)
REFUSED_FILES = ("Makefile", "ansible.cfg", "pyproject.toml", "requirements-dev.txt")
REFUSED_IMPORTS = {"lab", "labctl", "test_add_workers", "conftest", "matrix", "cases"}


def version_tuple(text):
    return tuple(int(part) for part in str(text).split("."))


def problems_of(tarball, version):
    problems = []
    with tarfile.open(tarball) as archive:
        members = [m for m in archive.getmembers() if m.isfile()]
        for member in members:
            name = member.name
            hidden = any(part.startswith(".") for part in name.split("/"))
            if name.startswith(REFUSED) or name in REFUSED_FILES or hidden:
                problems.append(f"{name}: must not be in the tarball (add it to build_ignore in galaxy.yml)")
                continue
            if not name.endswith(".py"):
                continue
            text = archive.extractfile(member).read().decode()
            tree = ast.parse(text, name)
            for node in ast.walk(tree):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                names += [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
                for imported in names:
                    if imported.split(".")[0] in REFUSED_IMPORTS:
                        problems.append(f"{name}: imports {imported}, which the tarball does not hold")
            if name.startswith("plugins/modules/"):
                for node in ast.walk(tree):
                    if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "DOCUMENTATION":
                        added = (yaml.safe_load(node.value.value) or {}).get("version_added")
                        if added and version_tuple(added) > version_tuple(version):
                            problems.append(f"{name}: version_added {added} is newer than galaxy.yml's {version}")
    return len(members), problems


def main():
    keep = Path(sys.argv[sys.argv.index("--keep") + 1]) if "--keep" in sys.argv else None
    version = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
    with tempfile.TemporaryDirectory() as scratch:
        out = keep or Path(scratch)
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [str(ROOT / ".venv/bin/ansible-galaxy"), "collection", "build", "--force", "--output-path", str(out)],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        tarball = next(out.glob(f"openshift_agent-day2-{version}.tar.gz"))
        count, problems = problems_of(tarball, version)
    print(f"tarball: {tarball.name}: {count} files")
    for problem in problems:
        print("tarball: " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
