#!/usr/bin/env bash
# The controller code must run on Python 3.9 (tests/config.yml): compile every plugin with the oldest supported Python.
# ansible-test sanity runs on 3.12 only, to stay fast; this catches 3.10+ syntax in plugins/.
set -euo pipefail
cd "$(dirname "$0")/.."
py=""
for candidate in "${PYTHON39:-}" /root/.pyenv/versions/3.9*/bin/python3 /usr/bin/python3.9; do
    [ -n "$candidate" ] && command -v "$candidate" >/dev/null 2>&1 && { py=$(command -v "$candidate"); break; }
done
if [ -z "$py" ]; then
    echo "py39: no Python 3.9 found (set PYTHON39=/path/to/python3.9)" >&2
    exit 1
fi
echo "py39: compiling plugins/ with $py"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$py" - "$out" <<'PY'
import pathlib, py_compile, sys
failed = 0
for path in sorted(pathlib.Path("plugins").rglob("*.py")):
    try:
        py_compile.compile(str(path), cfile=str(pathlib.Path(sys.argv[1]) / (path.name + "c")), doraise=True)
    except py_compile.PyCompileError as error:
        failed += 1
        print(error.msg, file=sys.stderr)
print("py39: %d files, %d failed" % (len(list(pathlib.Path("plugins").rglob("*.py"))), failed))
sys.exit(1 if failed else 0)
PY
