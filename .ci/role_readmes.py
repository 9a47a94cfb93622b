"""Write each role's README.md from its meta/argument_specs.yml (--check: exit 1 when a README is out of date).

The argument specs are the one definition of a role's options; the README shows them as a table.
"""

import pathlib
import re
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]


def plain(text):
    """Ansible documentation markup (C(), O(), M(), V()) as Markdown."""
    text = re.sub(r"[COV]\(([^)]*)\)", r"`\1`", str(text))
    return re.sub(r"M\(([^)]*)\)", r"`\1`", text)


def readme(role, spec):
    main = spec["argument_specs"]["main"]
    description = main.get("description") or []
    lines = ["# Role openshift_agent.day2.%s" % role, "", plain(main["short_description"]) + ".", ""]
    for paragraph in description if isinstance(description, list) else [description]:
        lines += [plain(paragraph), ""]
    lines += ["## Variables", "", "| variable | type | default | description |", "|---|---|---|---|"]
    for name, option in main.get("options", {}).items():
        kind = option.get("type", "str")
        if option.get("elements"):
            kind += " of " + option["elements"]
        default = "required" if option.get("required") else "`%s`" % option.get("default", "")
        text = option.get("description")
        text = " ".join(text) if isinstance(text, list) else text
        lines.append("| `%s` | %s | %s | %s |" % (name, kind, default, plain(text).replace("\n", " ")))
    used = "Used by `playbooks/add_workers.yml` and `playbooks/replace_worker.yml`; see `docs/user-guide.md`."
    lines += ["", used, ""]
    return "\n".join(lines)


def main():
    stale = []
    for spec_file in sorted(ROOT.glob("roles/*/meta/argument_specs.yml")):
        role = spec_file.parents[1].name
        text = readme(role, yaml.safe_load(spec_file.read_text()))
        target = spec_file.parents[1] / "README.md"
        if "--check" in sys.argv:
            if target.read_text() != text:
                stale.append(str(target.relative_to(ROOT)))
        else:
            target.write_text(text)
    for path in stale:
        print("role_readmes: %s is out of date: run python .ci/role_readmes.py" % path)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
