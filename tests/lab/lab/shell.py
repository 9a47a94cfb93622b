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
import stat
import tarfile
import time
from collections import namedtuple

CHUNK = 256 * 1024
TAR_RECORD = 10240
SHELLS = ("sh", "/bin/sh", "bash", "/bin/bash", "/usr/bin/bash")

ExecResult = namedtuple("ExecResult", "stdout stderr exit_code")
ExecResult.__doc__ = """stdout: iterator of bytes chunks (each <= 256 KiB); stderr: bytes; exit_code: int."""


def _empty():
    return iter(())


def _result(stdout=None, stderr=b"", code=0):
    if isinstance(stderr, str):
        stderr = stderr.encode()
    return ExecResult(stdout if stdout is not None else _empty(), stderr, code)


def _stream(path, start=0, length=None):
    """Yield the bytes of ``path`` from ``start``, ``length`` bytes at most, in chunks."""
    with open(path, "rb") as f:
        f.seek(start)
        remaining = length
        while remaining is None or remaining > 0:
            chunk = f.read(CHUNK if remaining is None else min(CHUNK, remaining))
            if not chunk:
                return
            if remaining is not None:
                remaining -= len(chunk)
            yield chunk


def _parse_size(text):
    """coreutils sizes: 512, 4K, 1M, 1G, 1KB (=1000)... Raises ValueError."""
    units = {
        "": 1,
        "c": 1,
        "w": 2,
        "b": 512,
        "K": 1024,
        "k": 1024,
        "KiB": 1024,
        "KB": 1000,
        "kB": 1000,
        "M": 1024**2,
        "MiB": 1024**2,
        "MB": 1000**2,
        "G": 1024**3,
        "GiB": 1024**3,
        "GB": 1000**3,
    }
    digits = len(text) - len(text.lstrip("0123456789"))
    if digits == 0 or text[digits:] not in units:
        raise ValueError(text)
    return int(text[:digits]) * units[text[digits:]]


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

    def _missing(self, path):
        return not os.path.lexists(self.host_path(path))

    def _cat(self, args):
        streams, errors = [], []
        for name in args or ["-"]:
            real = self.host_path(name)
            if name == "-":
                continue
            if not os.path.exists(real):
                errors.append("cat: %s: No such file or directory\n" % name)
            elif os.path.isdir(real):
                errors.append("cat: %s: Is a directory\n" % name)
            else:
                streams.append(_stream(real))
        return _result(_chain(streams), "".join(errors), 1 if errors else 0)

    def _sha256sum(self, args):
        files, errors = [], []
        for name in args:
            real = self.host_path(name)
            if not os.path.exists(real):
                errors.append("sha256sum: %s: No such file or directory\n" % name)
            elif os.path.isdir(real):
                errors.append("sha256sum: %s: Is a directory\n" % name)
            else:
                files.append((name, real))

        def lines():
            for name, real in files:
                digest = hashlib.sha256()
                for chunk in _stream(real):
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
                    out.extend(_long_line(os.path.join(real, e), e) for e in entries)
                else:
                    out.extend(e + "\n" for e in entries)
            else:
                out.append(_long_line(real, name) if long_format else name + "\n")
        return _result(iter([("".join(out)).encode()]) if out else None, "".join(errors), 2 if errors else 0)

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
        return _result(iter([("".join(out)).encode()]) if out else None, "".join(errors), 1 if errors else 0)

    def _head(self, args):
        if len(args) != 3 or args[0] != "-c":
            return _result(stderr="head: only -c N FILE is supported in the lab\n", code=1)
        try:
            count = _parse_size(args[1])
        except ValueError:
            return _result(stderr="head: invalid number of bytes: '%s'\n" % args[1], code=1)
        real = self.host_path(args[2])
        if not os.path.exists(real):
            return _result(stderr="head: cannot open '%s' for reading: No such file or directory\n" % args[2], code=1)
        if os.path.isdir(real):
            return _result(stderr="head: error reading '%s': Is a directory\n" % args[2], code=1)
        return _result(_stream(real, 0, count))

    def _dd(self, args):
        ops = {}
        for arg in args:
            key, sep, value = arg.partition("=")
            if not sep:
                return _result(stderr="dd: unrecognized operand '%s'\n" % arg, code=1)
            ops[key] = value
        flags = set(ops.get("iflag", "").split(",")) - {""}
        try:
            bs = _parse_size(ops.get("bs", "512"))
            skip = _parse_size(ops.get("skip", "0"))
            count = _parse_size(ops["count"]) if "count" in ops else None
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
        stderr = b"" if ops.get("status") in ("none", "noxfer") else _dd_summary(copied, bs).encode()
        return _result(_stream(real, start, copied), stderr)

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
        return _result(_tar_stream(present), "".join(errors), 2 if errors else 0)


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


def _chain(iterators):
    for it in iterators:
        yield from it


def _drain(iterator):
    for _chunk in iterator:
        pass


def _long_line(real, name):
    st = os.lstat(real)
    owner = "root" if st.st_uid == 0 else str(st.st_uid)
    group = "root" if st.st_gid == 0 else str(st.st_gid)
    when = time.strftime("%b %e %H:%M", time.localtime(st.st_mtime))
    return "%s %d %s %s %d %s %s\n" % (stat.filemode(st.st_mode), st.st_nlink, owner, group, st.st_size, when, name)


def _dd_summary(copied, bs):
    full, partial = divmod(copied, bs)
    records = "%d+%d" % (full, 1 if partial else 0)
    if copied < 1000:
        amount = "%d bytes" % copied
    else:
        amount = "%d bytes (%.1f MB, %.1f MiB)" % (copied, copied / 1e6, copied / 1048576.0)
    # The lab claims every copy took 1 ms.
    rate = copied / 1e3
    return "%s records in\n%s records out\n%s copied, 0.001 s, %.1f MB/s\n" % (records, records, amount, rate)


def _tar_entries(name, real):
    """(archive name, real path) for a member and, for a directory, everything below it."""
    yield name, real
    if os.path.isdir(real) and not os.path.islink(real):
        for entry in sorted(os.listdir(real)):
            yield from _tar_entries(posixpath.join(name, entry), os.path.join(real, entry))


def _tar_stream(members):
    written = 0
    for top_name, top_real in members:
        for name, real in _tar_entries(top_name.rstrip("/") or top_name, top_real):
            st = os.lstat(real)
            info = tarfile.TarInfo(name.lstrip("/"))
            info.mode = stat.S_IMODE(st.st_mode)
            info.mtime = int(st.st_mtime)
            info.uid, info.gid = st.st_uid, st.st_gid
            if stat.S_ISDIR(st.st_mode):
                info.type = tarfile.DIRTYPE
            elif stat.S_ISLNK(st.st_mode):
                info.type = tarfile.SYMTYPE
                info.linkname = os.readlink(real)
            else:
                info.size = st.st_size
            header = info.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape")
            yield header
            written += len(header)
            if info.type == tarfile.REGTYPE:
                sent = 0
                for chunk in _stream(real, 0, info.size):
                    sent += len(chunk)
                    yield chunk
                # A file that shrank while archived is padded, as GNU tar does.
                padding = (info.size - sent) + (-info.size % 512)
                if padding:
                    yield bytes(padding)
                written += info.size + (-info.size % 512)
    end = 1024 + (-(written + 1024) % TAR_RECORD)
    yield bytes(end)


def execute(root, command):
    """Run ``command`` in the container whose root filesystem is the directory ``root``."""
    return Container(root).execute(command)
