"""The ``node-joiner`` command line as the real binary parses it (cobra + pflag), per release.

- flags of ``add-nodes``: the persistent ``--kubeconfig``, ``--dir`` (default ``.``), ``--log-level`` (default
  ``info``) -- openshift/installer cmd/node-joiner/main.go@52e2540bb22e42b2bf9de1304d0a3cf17d9c2e0c (4.17);
  ``--pxe``/``-p`` and ``--config-iso`` from 4.18 (installer PRs #9097, #9214);
- an unknown flag: pflag's ``unknown flag: --X`` (``unknown shorthand flag: 'x' in -x``) --
  spf13/pflag flag.go@5fdac2d16c16d60605cb8baa887e8c5c38ef623f; cobra prints ``Error: <err>`` and the usage
  to stderr -- spf13/cobra command.go@adbc8813901bba65827259daa8e22ff94ec1f30e (``ExecuteC``); ``main`` then
  ``logrus.Fatal(err)``: one more line in logrus's default format (the file hook of ``PersistentPreRun`` is not
  installed yet) and exit status 1; nothing is written to the assets directory.
"""

import datetime
import json
import shlex

from .versions import Profile

FLAG_HELP = {
    "--config-iso": (
        "",
        "Generates a config ISO instead of a bootable image, to be attached to a node booted from a generic ISO",
        False,
    ),
    "--pxe": (
        "-p",
        "Instead of an ISO, generates PXE artifacts that can be used to boot the configured nodes to "
        "let them join an existing cluster",
        False,
    ),
}
GLOBAL_HELP = {
    "--dir": ("string", 'assets directory (default ".")'),
    "--kubeconfig": ("string", "Path to the kubeconfig file."),
    "--log-level": ("string", 'log level (e.g. "debug | info | warn | error") (default "info")'),
}
STRING_FLAGS = ("--kubeconfig", "--dir", "--log-level")
BOOL_VALUES = ("1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False")


class UsageError(Exception):
    """The command line is refused before node-joiner runs; ``stderr`` is what the process printed."""

    def __init__(self, message, stderr):
        Exception.__init__(self, message)
        self.stderr = stderr


SHELLS = ("sh", "bash")


def node_joiner_argv(command):
    """The argv after ``node-joiner`` in a pod command (``bash -c "...; HOME=/assets node-joiner ...; sleep"``).

    ``command``: the container's command + args (a list), or the shell script itself (a string).
    """
    if not isinstance(command, str):
        words = list(command)
        if words and words[0].rsplit("/", 1)[-1] in SHELLS and "-c" in words[1:-1]:
            command = words[words.index("-c") + 1]
        else:
            command = " ".join(shlex.quote(word) for word in words)
    for segment in command.split(";"):
        words = shlex.split(segment)
        while words and "=" in words[0] and not words[0].startswith("-"):
            words = words[1:]  # VAR=value prefixes
        if words and words[0].rsplit("/", 1)[-1] == "node-joiner":
            return words[1:]
    return None


def usage(profile: Profile):
    """``add-nodes``'s usage block as cobra prints it."""
    lines = ["Usage:", "  node-joiner add-nodes [flags]", "", "Flags:"]
    local = (
        [("", "--config-iso", "", FLAG_HELP["--config-iso"][1])] if "--config-iso" in profile.add_nodes_flags else []
    )
    local.append(("-h", "--help", "", "help for add-nodes"))
    if "--pxe" in profile.add_nodes_flags:
        local.append(("-p", "--pxe", "", FLAG_HELP["--pxe"][1]))
    lines += _flag_lines(local)
    lines += ["", "Global Flags:"]
    lines += _flag_lines([("", name, kind, text) for name, (kind, text) in sorted(GLOBAL_HELP.items())])
    return "\n".join(lines) + "\n"


def _flag_lines(entries):
    rendered = []
    for short, name, kind, text in entries:
        left = ("  %s, %s" % (short, name)) if short else ("      %s" % name)
        if kind:
            left += " " + kind
        rendered.append((left, text))
    width = max(len(left) for left, _text in rendered)
    return ["%s   %s" % (left.ljust(width), text) for left, text in rendered]


def _logrus_default(level, message, now):
    stamp = datetime.datetime.fromtimestamp(now, tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return 'time="%s" level=%s msg=%s\n' % (stamp, level, json.dumps(message))


def parse_add_nodes(argv, profile: Profile, now):
    """``{"dir", "kubeconfig", "log_level", "pxe", "config_iso"}`` of ``node-joiner add-nodes ...``.

    Raises UsageError with cobra's and logrus's output for an unknown subcommand or flag.
    """
    if not argv or argv[0] != "add-nodes":
        sub = argv[0] if argv else ""
        error = 'unknown command "%s" for "node-joiner"' % sub
        raise UsageError(
            error, "Error: %s\nRun 'node-joiner --help' for usage.\n%s" % (error, _logrus_default("fatal", error, now))
        )
    known = set(profile.add_nodes_flags) | {"-h", "--help"}
    options = {"dir": ".", "kubeconfig": "", "log_level": "info", "pxe": False, "config_iso": False}
    args = list(argv[1:])
    while args:
        word = args.pop(0)
        if word == "--":
            break
        if not word.startswith("-") or word == "-":
            continue  # positional arguments are accepted and ignored
        name, has_value, value = word.partition("=")
        if name.startswith("--"):
            if name not in known:
                _refuse("unknown flag: %s" % name, profile, now)
        else:
            letter = word[1:2]
            if "-" + letter not in known:
                _refuse("unknown shorthand flag: '%s' in %s" % (letter, word), profile, now)
            name = {"-p": "--pxe", "-h": "--help"}["-" + letter]
            has_value, value = (word[2:3] == "="), word[3:]
        if name in STRING_FLAGS:
            if not has_value:
                if not args:
                    _refuse("flag needs an argument: %s" % name, profile, now)
                value = args.pop(0)
            options[name[2:].replace("-", "_")] = value
        elif name == "--help":
            raise UsageError("help requested", usage(profile))
        else:
            if has_value and value not in BOOL_VALUES:
                _refuse(
                    'invalid argument "%s" for "%s" flag: strconv.ParseBool: parsing "%s": invalid syntax'
                    % (value, name, value),
                    profile,
                    now,
                )
            options[name[2:].replace("-", "_")] = (value in BOOL_VALUES[:6]) if has_value else True
    return options


def _refuse(error, profile, now):
    raise UsageError(error, "Error: %s\n%s\n%s" % (error, usage(profile), _logrus_default("fatal", error, now)))
