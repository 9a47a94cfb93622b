"""The ``node-joiner`` command line as the real binary parses it (cobra + pflag), per release.

- flags of ``add-nodes``: the persistent ``--kubeconfig``, ``--dir`` (default ``.``), ``--log-level`` (default
  ``info``) -- openshift/installer cmd/node-joiner/main.go@52e2540bb22e42b2bf9de1304d0a3cf17d9c2e0c (4.17);
  ``--pxe``/``-p`` and ``--config-iso`` from 4.18 (installer PRs #9097, #9214);
- ``monitor-add-nodes``: the persistent flags only, the addresses to follow as arguments (main.go, same commit;
  oc's ``node-image monitor`` passes them space-separated -- openshift/oc
  pkg/cli/admin/nodeimage/monitor.go@6febe61977471b066f08d513424b226b82ee518f);
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
_GLOBAL = STRING_FLAGS
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


def usage(profile: Profile, command: str = "add-nodes"):
    """A subcommand's usage block as cobra prints it."""
    monitor = command == MONITOR
    lines = ["Usage:", f"  node-joiner {command} [flags]", "", "Flags:"]
    local = (
        [("", "--config-iso", "", FLAG_HELP["--config-iso"][1])]
        if "--config-iso" in profile.add_nodes_flags and not monitor
        else []
    )
    local.append(("-h", "--help", "", f"help for {command}"))
    if "--pxe" in profile.add_nodes_flags and not monitor:
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


MONITOR = "monitor-add-nodes"


def parse_add_nodes(argv, profile: Profile, now):
    """``{"command", "dir", "kubeconfig", "log_level", "pxe", "config_iso", "addresses"}`` of ``node-joiner add-nodes
    ...`` or ``node-joiner monitor-add-nodes ... IP...`` (``addresses``: its arguments).

    Raises UsageError with cobra's and logrus's output for an unknown subcommand or flag.
    """
    if not argv or argv[0] not in ("add-nodes", MONITOR):
        sub = argv[0] if argv else ""
        error = 'unknown command "%s" for "node-joiner"' % sub
        raise UsageError(
            error, "Error: %s\nRun 'node-joiner --help' for usage.\n%s" % (error, _logrus_default("fatal", error, now))
        )
    command = argv[0]
    known = set(_GLOBAL if command == MONITOR else profile.add_nodes_flags) | {"-h", "--help"}
    options = {"command": command, "dir": ".", "kubeconfig": "", "log_level": "info", "pxe": False}
    options.update(config_iso=False, addresses=[])
    args = list(argv[1:])
    while args:
        word = args.pop(0)
        if word == "--":
            options["addresses"] += args
            break
        if not word.startswith("-") or word == "-":
            options["addresses"].append(word)  # add-nodes ignores its arguments
            continue
        name, has_value, value = word.partition("=")
        if name.startswith("--"):
            if name not in known:
                _refuse("unknown flag: %s" % name, profile, now, command)
        else:
            letter = word[1:2]
            if "-" + letter not in known:
                _refuse("unknown shorthand flag: '%s' in %s" % (letter, word), profile, now, command)
            name = {"-p": "--pxe", "-h": "--help"}["-" + letter]
            has_value, value = (word[2:3] == "="), word[3:]
        if name in STRING_FLAGS:
            if not has_value:
                if not args:
                    _refuse("flag needs an argument: %s" % name, profile, now, command)
                value = args.pop(0)
            options[name[2:].replace("-", "_")] = value
        elif name == "--help":
            raise UsageError("help requested", usage(profile, command))
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


def _refuse(error, profile, now, command="add-nodes"):
    raise UsageError(
        error, "Error: %s\n%s\n%s" % (error, usage(profile, command), _logrus_default("fatal", error, now))
    )
