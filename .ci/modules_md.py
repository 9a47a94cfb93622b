"""Write docs/modules.md from the modules' own documentation (--check: exit 1 when it is out of date).

Each module's DOCUMENTATION is the one description of it; this page lists every module with its short
description, whether it is in the action group of meta/runtime.yml, which step of the role runs it, and its
description. Run by .ci/lint.sh with --check.
"""

import ast
import pathlib
import re
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
TARGET = ROOT / "docs" / "modules.md"
INTRO = """# Module reference

Generated from the modules' own documentation by `.ci/modules_md.py` (CI checks it is current); the full reference
of each module, every option, return value and attribute, is `ansible-doc openshift_agent.day2.<name>`. Modules in
the action group `openshift_agent.day2.day2` take the `kubernetes.core` authentication options and `K8S_AUTH_*`
environment variables unchanged, so one `module_defaults` entry logs them all in. What differs between OpenShift
4.17 and 4.21 and how each module handles it: [versions.md](versions.md).
"""


def plain(text):
    """Ansible documentation markup as Markdown."""
    text = re.sub(r"\b[MCOVRE]V?\(([^)]*)\)", r"`\1`", str(text))
    return re.sub(r"\bL\(([^,]*),\s*([^)]*)\)", r"[\1](\2)", text)


def documentation(path):
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "DOCUMENTATION":
            return yaml.safe_load(node.value.value)
    raise SystemExit("%s has no DOCUMENTATION" % path)


def render():
    group = set(yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())["action_groups"]["day2"])
    steps = {}
    for tasks in sorted((ROOT / "roles" / "day2" / "tasks").glob("*.yml")):
        for name in re.findall(r"^\s*openshift_agent\.day2\.(\w+):", tasks.read_text(), re.MULTILINE):
            steps.setdefault(name, []).append(tasks.stem)
    lines = [INTRO, "| module | what it does | action group | run by the role's step |", "|---|---|---|---|"]
    sections = []
    for path in sorted((ROOT / "plugins" / "modules").glob("*.py")):
        doc = documentation(path)
        name = doc["module"]
        ran = ", ".join(sorted(set(steps.get(name, [])))) or "no (use it in your own plays)"
        lines.append(
            "| [`%s`](#%s) | %s | %s | %s |"
            % (name, name, plain(doc["short_description"]), "yes" if name in group else "no", ran)
        )
        description = doc["description"] if isinstance(doc["description"], list) else [doc["description"]]
        sections += ["", "## %s" % name, ""] + [plain(" ".join(str(p).split())) + "\n" for p in description]
    return "\n".join(lines + sections).rstrip() + "\n"


def main():
    text = render()
    if "--check" in sys.argv:
        if TARGET.read_text() != text:
            print("modules_md: docs/modules.md is out of date: run python .ci/modules_md.py")
            return 1
        return 0
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
