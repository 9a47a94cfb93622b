"""Count the code lines of plugins/ the way the architecture issue counts them, and hold them to the limit.

A code line is a line that is not blank, not a comment, not inside a docstring (of a module, class or function) and
not inside a module's DOCUMENTATION, EXAMPLES or RETURN string. Prints the figure and the largest files; exits 1
over LIMIT. Run by .ci/lint.sh (so by make test).
"""

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
# The architecture rework brought plugins/ from 10,203 to 6,846 code lines for the same behaviour. Behaviour added
# since (serving SANs on real NICs, the BMC preflight, platform External, node-joiner's early failures, the 4.17 token
# rule, following from the cluster) was paid for by folding what was written twice; the limit stays at 7,000.
LIMIT = 7000
DOC_STRINGS = {"DOCUMENTATION", "EXAMPLES", "RETURN"}


def code_lines(path):
    text = path.read_text()
    skip = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") in DOC_STRINGS for t in node.targets):
            skip.update(range(node.lineno, node.end_lineno + 1))
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            value = getattr(first, "value", None)
            if isinstance(first, ast.Expr) and isinstance(value, ast.Constant) and isinstance(value.value, str):
                skip.update(range(first.lineno, first.end_lineno + 1))
    return sum(
        1
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip() and not line.strip().startswith("#") and number not in skip
    )


def main():
    counts = {path: code_lines(path) for path in sorted((ROOT / "plugins").rglob("*.py"))}
    total = sum(counts.values())
    for path, count in sorted(counts.items(), key=lambda item: -item[1])[:5]:
        print("codelines: %5d %s" % (count, path.relative_to(ROOT)))
    print("codelines: plugins/ has %d code lines in %d files (limit %d)" % (total, len(counts), LIMIT))
    return 1 if total > LIMIT else 0


if __name__ == "__main__":
    sys.exit(main())
