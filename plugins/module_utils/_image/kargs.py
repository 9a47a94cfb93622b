# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel-argument areas of a CoreOS live ISO: one region holds ``kargs + end + pad * n``.

``coreos/kargs.json`` (``kargs.jso`` in a node-joiner ISO) names the regions; coreos-installer reads and
writes them the same way -- coreos/coreos-installer src/live/embed.rs@bee4500186302e3773afe969ecabb441f2d77279
(``KargEmbedInfo``).
"""

from __future__ import annotations

from ansible_collections.openshift_agent.day2.plugins.module_utils._image.errors import CapacityError, IsoLayoutError

DEFAULT_KARGS_PAD = "#"
DEFAULT_KARGS_END = "\n"
# coreos-installer refuses kargs areas larger than this; a bigger value means a corrupt kargs.json.
KARGS_MAX_SIZE = 2048


def parse_kargs_region(raw: bytes, pad: str = DEFAULT_KARGS_PAD, end: str = DEFAULT_KARGS_END) -> str:
    """Kernel arguments stored in one region: strip trailing pad, then the end marker, then blanks."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IsoLayoutError("kargs area is not UTF-8 text: %s" % exc)
    return text.rstrip(pad).rstrip(end).strip()


def format_kargs_region(kargs: str, size: int, pad: str = DEFAULT_KARGS_PAD, end: str = DEFAULT_KARGS_END) -> bytes:
    """Region bytes for ``kargs``: ``kargs + end`` then ``pad`` up to ``size`` bytes."""
    text = kargs.strip().encode("utf-8")
    end_bytes, pad_bytes = end.encode("utf-8"), pad.encode("utf-8")
    if len(text) + len(end_bytes) > size:
        raise CapacityError(
            "kernel arguments are %d bytes, the kargs area holds at most %d" % (len(text), size - len(end_bytes))
        )
    fill = size - len(text) - len(end_bytes)
    if fill % len(pad_bytes):
        raise IsoLayoutError("kargs pad character %r does not evenly fill the area" % pad)
    return text + end_bytes + pad_bytes * (fill // len(pad_bytes))


def split_kargs(kargs: str) -> list[str]:
    """Split a kernel command line into arguments; double quotes protect spaces, as in the kernel."""
    args: list[str] = []
    current: list[str] = []
    quoted = started = False
    for char in kargs:
        if char == '"':
            quoted = not quoted
        if char.isspace() and not quoted:
            if started:
                args.append("".join(current))
            current, started = [], False
            continue
        current.append(char)
        started = True
    if started:
        args.append("".join(current))
    return args


def merge_kargs(current: str, additions: str) -> str:
    """Append each argument of ``additions`` not already present in ``current``.

    Idempotent: merging the same additions again returns the same string.
    """
    args = split_kargs(current)
    for arg in split_kargs(additions):
        if arg not in args:
            args.append(arg)
    return " ".join(args)
