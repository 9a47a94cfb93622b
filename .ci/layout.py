"""The shape of the repository, checked: thin modules, cohesive module_utils (few files, none too long), a check
step that does not load the image step's pod exec or ISO reader, a repository that stands alone, an architecture
document that matches the tree, workflow tables (README.md, docs/user-guide.md) that name exactly the modules each
step of roles/day2/tasks/ runs, and galaxy.yml pointing at the project's own places. Run by .ci/lint.sh; exits 1 and
names every breach.
"""

import ast
import pathlib
import re
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODULE_CODE_LINES = 80  # per module, outside DOCUMENTATION, EXAMPLES and RETURN
FILE_LINES = 800  # per module_utils, action plugin and lab file: one file per concept, none too long
MODULE_UTILS_FILES = 45  # one file per concept, not a file per function
# What the check step (workers_check, on the controller) must never load: the image step's pod exec and ISO reader.
CHECK_STEP = "plugins/action/workers_check.py"
NOT_IN_CHECK_STEP = ("_image.pod_exec", "_image.iso", "_image.node_joiner")
DOC_STRINGS = {"DOCUMENTATION", "EXAMPLES", "RETURN"}
# The documents whose workflow table (header "step (tag)") names the modules of every step of the role.
WORKFLOW_TABLES = ("README.md", "docs/user-guide.md")
NOT_IN_PLAYBOOK = "(not in the playbook)"  # the row of the modules no step runs
GALAXY_URLS = ("repository", "documentation", "issues")
PLACEHOLDER_HOSTS = re.compile(r"(^|\.)(example\.(com|org|net)|[^/]*\.invalid|localhost|[^/]*\.test)$")
OUTSIDE_FILES = re.compile(r"\b(FACTS|LAB|DESIGN)\.md\b")
SKIP_DIRS = {".git", ".venv", ".collections", ".cache", "tests/output", ".build"}


def module_code_lines(path):
    """Lines of a module that are not its documentation strings, blank lines or comments."""
    tree = ast.parse(path.read_text())
    docs = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) in DOC_STRINGS for t in node.targets):
            docs.update(range(node.lineno, node.end_lineno + 1))
    lines = path.read_text().splitlines()
    return sum(
        1
        for number, line in enumerate(lines, start=1)
        if number not in docs and line.strip() and not line.strip().startswith("#")
    )


def files(*patterns):
    for pattern in patterns:
        yield from sorted(ROOT.glob(pattern))


def tracked_text_files():
    for path in ROOT.rglob("*"):
        relative = path.relative_to(ROOT).as_posix()
        if path.is_dir() or any(relative == d or relative.startswith(d + "/") for d in SKIP_DIRS):
            continue
        if "__pycache__" in relative or path.suffix in (".iso", ".img", ".pyc"):
            continue
        try:
            yield relative, path.read_text()
        except (UnicodeDecodeError, OSError):
            continue


def documentation_problems(path):
    """The module's DOCUMENTATION, EXAMPLES and RETURN must be YAML (ansible-doc reads them so)."""
    problems = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) in DOC_STRINGS:
            try:
                yaml.safe_load(node.value.value)
            except yaml.YAMLError as error:
                problems.append(
                    "%s: %s is not YAML: %s" % (path.name, node.targets[0].id, str(error).replace("\n", " "))
                )
    return problems


def step_modules():
    """{step (task file stem): modules of this collection its tasks call}, block/rescue/always included."""

    def calls(node):
        if isinstance(node, list):
            for item in node:
                yield from calls(item)
        elif isinstance(node, dict):
            for key, value in node.items():
                if str(key).startswith("openshift_agent.day2."):
                    yield str(key).rsplit(".", 1)[1]
                if key in ("block", "rescue", "always"):
                    yield from calls(value)

    return {
        path.stem: set(calls(yaml.safe_load(path.read_text())))
        for path in files("roles/day2/tasks/*.yml")
        if path.stem != "main"
    }


def workflow_table_problems(relative, steps, modules):
    """The table of ``relative`` whose header has "step (tag)": each row's modules are exactly its step's."""
    lines = (ROOT / relative).read_text().splitlines()
    header = next((n for n, line in enumerate(lines) if line.startswith("| step (tag) |")), None)
    if header is None:
        return ["%s: no workflow table (a row starting with '| step (tag) |')" % relative]
    cells = [c.strip() for c in lines[header].strip("|").split("|")]
    column = next(n for n, cell in enumerate(cells) if cell.startswith("modules"))
    problems, seen = [], set()
    for line in lines[header + 2 :]:
        if not line.startswith("|"):
            break
        row = [c.strip() for c in line.strip("|").split("|")]
        named = set(re.findall(r"`(\w+)`", row[column])) & modules
        if row[0] == NOT_IN_PLAYBOOK:
            step, wanted = row[0], modules - set().union(*steps.values())
        else:
            names = [n.strip() for n in row[0].split("(")[0].split(",")]
            step = next((n for n in names if n in steps), None)
            if step is None:
                problems.append("%s: workflow row %r names no task file of roles/day2/tasks" % (relative, row[0]))
                continue
            wanted = steps[step]
        seen.add(step)
        for name in sorted(wanted - named):
            problems.append("%s: workflow row %r does not name %s, which the step runs" % (relative, row[0], name))
        for name in sorted(named - wanted):
            problems.append("%s: workflow row %r names %s, which the step does not run" % (relative, row[0], name))
    for step in sorted(set(steps) - seen):
        problems.append(
            "%s: the workflow table has no row of step %s (roles/day2/tasks/%s.yml)" % (relative, step, step)
        )
    return problems


def galaxy_problems():
    """galaxy.yml's repository, documentation and issues: set, https, and not a placeholder domain."""
    galaxy = yaml.safe_load((ROOT / "galaxy.yml").read_text())
    problems = []
    for field in GALAXY_URLS:
        url = str(galaxy.get(field) or "")
        host = url.split("://", 1)[-1].split("/", 1)[0]
        if not url.startswith("https://") or not host or PLACEHOLDER_HOSTS.search(host):
            problems.append("galaxy.yml: field %r value %r is not the project's own https URL" % (field, url))
    return problems


def loaded_modules(path, seen=None):
    """The collection's module_utils a plugin imports, directly or through others ("_image.iso", ...)."""
    seen = set() if seen is None else seen
    prefix = "ansible_collections.openshift_agent.day2.plugins.module_utils."
    for node in ast.walk(ast.parse(path.read_text())):
        names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
        names += (
            [prefix + node.module[len(prefix) :] + "." + a.name for a in getattr(node, "names", [])] if names else []
        )
        for name in names:
            if not name.startswith(prefix):
                continue
            short = name[len(prefix) :]
            target = ROOT / "plugins" / "module_utils" / (short.replace(".", "/") + ".py")
            if target.exists() and short not in seen:
                seen.add(short)
                loaded_modules(target, seen)
    return seen


def main():
    breaches = []
    for path in files("plugins/modules/*.py"):
        breaches.extend(documentation_problems(path))
        count = module_code_lines(path)
        if count >= MODULE_CODE_LINES:
            breaches.append("%s: %d lines of code outside its docs (limit %d)" % (path.name, count, MODULE_CODE_LINES))
    for path in files("plugins/module_utils/**/*.py", "plugins/action/*.py", "tests/lab/lab/**/*.py"):
        count = len(path.read_text().splitlines())
        if count > FILE_LINES:
            breaches.append("%s: %d lines (limit %d)" % (path.relative_to(ROOT), count, FILE_LINES))
    utils = list(files("plugins/module_utils/**/*.py"))
    if len(utils) > MODULE_UTILS_FILES:
        breaches.append("plugins/module_utils has %d files (limit %d)" % (len(utils), MODULE_UTILS_FILES))
    for name in sorted(loaded_modules(ROOT / CHECK_STEP) & set(NOT_IN_CHECK_STEP)):
        breaches.append("%s loads %s (through its imports)" % (CHECK_STEP, name))
    for relative, text in tracked_text_files():
        if relative == ".ci/layout.py":
            continue
        for match in OUTSIDE_FILES.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            breaches.append("%s:%d: refers to %s, which is not in the repository" % (relative, line, match.group(0)))
    architecture = (ROOT / "docs/architecture.md").read_text()
    for path in files("plugins/module_utils/**/*.py", "plugins/modules/*.py", "plugins/action/*.py"):
        if path.name == "__init__.py":
            continue
        relative = path.relative_to(ROOT / "plugins").as_posix()
        if relative not in architecture:
            breaches.append("docs/architecture.md does not name plugins/%s" % relative)
    for named in sorted(set(re.findall(r"`((?:module_utils|modules|action)/[\w/]+\.py)`", architecture))):
        if not (ROOT / "plugins" / named).exists():
            breaches.append("docs/architecture.md names plugins/%s, which does not exist" % named)
    modules = {path.stem for path in files("plugins/modules/*.py") if path.name != "__init__.py"}
    for relative in WORKFLOW_TABLES:
        breaches.extend(workflow_table_problems(relative, step_modules(), modules))
    breaches.extend(galaxy_problems())
    for breach in breaches:
        print("layout: " + breach)
    print("layout: %s" % ("%d breach(es)" % len(breaches) if breaches else "ok"))
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
