"""A tiny command interpreter for ``exec`` into the lab's simulated containers.

A real directory stands for the container's root filesystem (``/assets``,
``/config``, ``/release-manifests`` are its subdirectories).  The commands a
client may run to poll and copy files behave like coreutils/tar: same output,
same error messages, same exit codes.  Every check that decides the exit code is
done before the output is produced, so stdout can be a lazy generator of chunks
(a 1 GiB ``cat`` never sits in memory).
"""

import hashlib
import os
import posixpath
import shlex
from collections import namedtuple

from .coreutils import CHUNK, dd_summary, long_line, parse_size, stream_file, tar_stream

__all__ = ["CHUNK", "Container", "ExecResult", "execute"]

SHELLS = ("sh", "/bin/sh", "bash", "/bin/bash", "/usr/bin/bash")

ExecResult = namedtuple("ExecResult", "stdout stderr exit_code")
ExecResult.__doc__ = """stdout: iterator of bytes chunks (each <= 256 KiB); stderr: bytes; exit_code: int."""


def _empty():
    return iter(())


def _result(stdout=None, stderr=b"", code=0):
    if isinstance(stderr, str):
        stderr = stderr.encode()
    return ExecResult(stdout if stdout is not None else _empty(), stderr, code)


class Container:
    """The filesystem of one simulated container, rooted at a real directory."""

    def __init__(self, root):
        self.root = os.path.realpath(root)

    def host_path(self, path, cwd="/"):
        """The real path of a container path; ``..`` cannot leave the root."""
        normal = posixpath.normpath(posixpath.join(cwd, path))
        return os.path.join(self.root, normal.lstrip("/"))

    # ------------------------------------------------------------------ entry point

    def execute(self, command):
        """Run ``command`` (argv list, or a string split like a shell would) -> ExecResult."""
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv:
            return _result(stderr="exec: no command given\n", code=127)
        if argv[0] in SHELLS:
            if len(argv) >= 3 and argv[1] == "-c":
                return self._shell(argv[2])
            return _result(stderr="%s: only -c COMMAND is supported in the lab\n" % argv[0], code=2)
        handler = self._handler(argv[0])
        if handler is None:
            return _result(
                stderr="OCI runtime exec failed: exec failed: unable to start container process: "
                'exec: "%s": executable file not found in $PATH: unknown\n' % argv[0],
                code=127,
            )
        return handler(argv[1:])

    def _handler(self, name):
        return {
            "cat": self._cat,
            "sha256sum": self._sha256sum,
            "ls": self._ls,
            "test": self._test,
            "[": self._bracket,
            "stat": self._stat,
            "tar": self._tar,
            "head": self._head,
            "dd": self._dd,
            "true": lambda args: _result(),
            "false": lambda args: _result(code=1),
        }.get(posixpath.basename(name) if name.startswith("/") else name)

    # ------------------------------------------------------------------ sh -c

    def _shell(self, script):
        """``sh -c``: one command, optionally chained with ``&&``, ``||`` or ``;`` and
        with ``2>/dev/null`` / ``>/dev/null`` redirections."""
        lexer = shlex.shlex(script, posix=True, punctuation_chars=";&|<>")
        lexer.whitespace_split = True
        tokens = list(lexer)
        outputs, errors, code = [], [], 0
        op = ";"
        pos = 0
        while pos < len(tokens):
            end = pos
            while end < len(tokens) and tokens[end] not in (";", "&&", "||"):
                end += 1
            argv, drop_out, drop_err = _redirections(tokens[pos:end])
            if (op == "&&" and code != 0) or (op == "||" and code == 0):
                pass
            elif argv:
                res = self._shell_command(argv)
                code = res.exit_code
                if drop_out:
                    _drain(res.stdout)
                else:
                    outputs.append(res.stdout)
                if not drop_err:
                    errors.append(res.stderr)
            op = tokens[end] if end < len(tokens) else ";"
            pos = end + 1
        return _result(_chain(outputs), b"".join(errors), code)

    def _shell_command(self, argv):
        handler = self._handler(argv[0])
        if handler is None:
            return _result(stderr="sh: 1: %s: not found\n" % argv[0], code=127)
        return handler(argv[1:])

    # ------------------------------------------------------------------ commands

    def _files(self, program, names):
        """``(name, real path)`` of the regular files among ``names``, and coreutils' errors for the others."""
        files, errors = [], []
        for name in names:
            real = self.host_path(name)
            if not os.path.exists(real):
                errors.append("%s: %s: No such file or directory\n" % (program, name))
            elif os.path.isdir(real):
                errors.append("%s: %s: Is a directory\n" % (program, name))
            else:
                files.append((name, real))
        return files, errors

    def _cat(self, args):
        files, errors = self._files("cat", [name for name in args if name != "-"])  # no stdin in the lab
        return _result(_chain(stream_file(real) for _name, real in files), "".join(errors), 1 if errors else 0)

    def _sha256sum(self, args):
        files, errors = self._files("sha256sum", args)

        def lines():
            for name, real in files:
                digest = hashlib.sha256()
                for chunk in stream_file(real):
                    digest.update(chunk)
                yield ("%s  %s\n" % (digest.hexdigest(), name)).encode()

        return _result(lines(), "".join(errors), 1 if errors else 0)

    def _ls(self, args):
        long_format = "-l" in args
        names = [a for a in args if not a.startswith("-")] or ["."]
        out, errors = [], []
        for name in names:
            real = self.host_path(name)
            if not os.path.lexists(real):
                errors.append("ls: cannot access '%s': No such file or directory\n" % name)
                continue
            if os.path.isdir(real):
                entries = sorted(e for e in os.listdir(real) if not e.startswith("."))
                if len(names) > 1:
                    out.append("%s:\n" % name)
                if long_format:
                    blocks = sum(os.lstat(os.path.join(real, e)).st_blocks for e in entries) // 2
                    out.append("total %d\n" % blocks)
                    out.extend(long_line(os.path.join(real, e), e) for e in entries)
                else:
                    out.extend(e + "\n" for e in entries)
            else:
                out.append(long_line(real, name) if long_format else name + "\n")
        return _lines(out, errors, 2)

    def _test(self, args):
        if len(args) == 2 and args[0] in ("-f", "-d", "-e", "-s"):
            real = self.host_path(args[1])
            ok = {
                "-f": os.path.isfile,
                "-d": os.path.isdir,
                "-e": os.path.exists,
                "-s": lambda p: os.path.exists(p) and os.path.getsize(p) > 0,
            }[args[0]](real)
            return _result(code=0 if ok else 1)
        return _result(stderr="test: unsupported expression: %s\n" % " ".join(args), code=2)

    def _bracket(self, args):
        if not args or args[-1] != "]":
            return _result(stderr="[: missing ']'\n", code=2)
        return self._test(args[:-1])

    def _stat(self, args):
        fmt = None
        names = []
        i = 0
        while i < len(args):
            if args[i] in ("-c", "--format") and i + 1 < len(args):
                fmt = args[i + 1]
                i += 2
                continue
            if args[i].startswith("--format="):
                fmt = args[i].split("=", 1)[1]
            else:
                names.append(args[i])
            i += 1
        if fmt is None:
            return _result(stderr="stat: only -c FORMAT is supported in the lab\n", code=1)
        out, errors = [], []
        for name in names:
            real = self.host_path(name)
            if not os.path.lexists(real):
                errors.append("stat: cannot statx '%s': No such file or directory\n" % name)
                continue
            st = os.stat(real)
            text = fmt.replace("%s", str(st.st_size)).replace("%n", name).replace("%Y", str(int(st.st_mtime)))
            out.append(text + "\n")
        return _lines(out, errors, 1)

    def _head(self, args):
        if len(args) != 3 or args[0] != "-c":
            return _result(stderr="head: only -c N FILE is supported in the lab\n", code=1)
        try:
            count = parse_size(args[1])
        except ValueError:
            return _result(stderr="head: invalid number of bytes: '%s'\n" % args[1], code=1)
        real = self.host_path(args[2])
        if not os.path.exists(real):
            return _result(stderr="head: cannot open '%s' for reading: No such file or directory\n" % args[2], code=1)
        if os.path.isdir(real):
            return _result(stderr="head: error reading '%s': Is a directory\n" % args[2], code=1)
        return _result(stream_file(real, 0, count))

    def _dd(self, args):
        ops = {}
        for arg in args:
            key, sep, value = arg.partition("=")
            if not sep:
                return _result(stderr="dd: unrecognized operand '%s'\n" % arg, code=1)
            ops[key] = value
        flags = set(ops.get("iflag", "").split(",")) - {""}
        try:
            bs = parse_size(ops.get("bs", "512"))
            skip = parse_size(ops.get("skip", "0"))
            count = parse_size(ops["count"]) if "count" in ops else None
        except ValueError as exc:
            return _result(stderr="dd: invalid number: '%s'\n" % exc, code=1)
        if "if" not in ops:
            return _result(stderr="dd: the lab has no stdin: give if=FILE\n", code=1)
        real = self.host_path(ops["if"])
        if not os.path.exists(real):
            return _result(stderr="dd: failed to open '%s': No such file or directory\n" % ops["if"], code=1)
        size = os.path.getsize(real)
        start = skip if "skip_bytes" in flags else skip * bs
        wanted = None if count is None else (count if "count_bytes" in flags else count * bs)
        available = max(0, size - start)
        copied = available if wanted is None else min(wanted, available)
        stderr = b"" if ops.get("status") in ("none", "noxfer") else dd_summary(copied, bs).encode()
        return _result(stream_file(real, start, copied), stderr)

    def _tar(self, args):
        """``tar cf - [-C DIR] FILES...`` writing a GNU tar stream to stdout."""
        if len(args) < 2 or args[0] not in ("cf", "-cf", "c") or args[1] != "-":
            return _result(stderr="tar: the lab only supports 'tar cf - [-C DIR] FILES...'\n", code=2)
        cwd = "/"
        members = []
        rest = args[2:]
        i = 0
        while i < len(rest):
            if rest[i] == "-C" and i + 1 < len(rest):
                cwd = posixpath.join(cwd, rest[i + 1])
                if not os.path.isdir(self.host_path(cwd)):
                    return _result(
                        stderr="tar: %s: Cannot open: No such file or directory\n"
                        "tar: Error is not recoverable: exiting now\n" % rest[i + 1],
                        code=2,
                    )
                i += 2
                continue
            members.append((rest[i], self.host_path(rest[i], cwd)))
            i += 1
        if not members:
            return _result(stderr="tar: Cowardly refusing to create an empty archive\n", code=2)
        present, errors = [], []
        for name, real in members:
            if os.path.lexists(real):
                present.append((name, real))
            else:
                errors.append("tar: %s: Cannot stat: No such file or directory\n" % name)
        if errors:
            errors.append("tar: Exiting with failure status due to previous errors\n")
        return _result(tar_stream(present), "".join(errors), 2 if errors else 0)


def _redirections(tokens):
    """Strip ``>/dev/null``, ``2>/dev/null``, ``2>&1`` from a token list."""
    argv, drop_out, drop_err = [], False, False
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok in (">", ">>") and i + 1 < len(tokens):
            drop_out = drop_out or tokens[i + 1] == "/dev/null"
            i += 2
            continue
        if tok in ("1", "2") and i + 2 < len(tokens) and tokens[i + 1] in (">", ">&"):
            target = tokens[i + 2]
            if tok == "2" and target == "/dev/null":
                drop_err = True
            elif tok == "1" and target == "/dev/null":
                drop_out = True
            i += 3
            continue
        argv.append(tok)
        i += 1
    return argv, drop_out, drop_err


def _lines(out, errors, failure_code):
    """A command's text lines on stdout, its error lines on stderr, ``failure_code`` if there were any errors."""
    return _result(iter(["".join(out).encode()]) if out else None, "".join(errors), failure_code if errors else 0)


def _chain(iterators):
    for it in iterators:
        yield from it


def _drain(iterator):
    for _chunk in iterator:
        pass


def execute(root, command):
    """Run ``command`` in the container whose root filesystem is the directory ``root``."""
    return Container(root).execute(command)
