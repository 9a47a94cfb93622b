"""``labctl``: start, stop and inspect the lab (the contract is documented in docs/lab.md and docs/lab-hosts.md).

A new subcommand is one function ``cmd_NAME(args)`` plus one entry in ``SUBCOMMANDS``; a new start option
is one ``add_argument`` in ``add_start_options`` (the daemon parses the same options, read them as
``ctx.options.NAME``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

READY_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
LAB_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class LabError(Exception):
    """A failure labctl reports on stderr with exit code 1."""


def add_start_options(parser: argparse.ArgumentParser) -> None:
    from . import seeds  # the daemon imports this module too; seeds stays a light import

    parser.add_argument("--state", required=True, help="state directory (kubeconfigs, inventory, lab.json, lab.log)")
    parser.add_argument("--hosts", type=int, default=3, help="number of new hosts in the inventory (default 3)")
    parser.add_argument("--variant", default="default", choices=seeds.variants(), help="seeded cluster variant")
    parser.add_argument("--api-port", type=int, default=0, help="API server port (default: a free port)")
    parser.add_argument(
        "--event-window", type=int, default=2000, help="watch events retained; older resourceVersions get 410 Gone"
    )
    parser.add_argument(
        "--install-seconds",
        type=float,
        default=8.0,
        help="how long a booted host takes from discovering to its reboot (default 8)",
    )
    parser.add_argument(
        "--agent-port",
        type=int,
        default=8090,
        help="agent API port on every host address (default 8090; 0: a free port, in lab.json)",
    )
    parser.add_argument(
        "--kubelet-port",
        type=int,
        default=10250,
        help="kubelet TLS port of every host after its reboot (default 10250; 0: a free port)",
    )
    parser.add_argument(
        "--redfish",
        action="store_true",
        help="also start sushy-emulator as every host's BMC; hosts boot from its virtual media",
    )
    parser.add_argument(
        "--csr-refile-seconds",
        type=float,
        default=3600.0,
        help="a kubelet files its CSR again when it is not answered within this time (default 3600)",
    )
    parser.add_argument(
        "--iso-size",
        type=int,
        default=8 * 1024 * 1024,
        help="bytes of the base ISO node-joiner builds from (built once per size, cached)",
    )
    parser.add_argument(
        "--nodejoiner-stage-delay", type=float, default=0.05, help="seconds each simulated node-joiner stage takes"
    )
    parser.add_argument(
        "--firewalled-hosts",
        action="store_true",
        help="every host's agent and kubelet answer the cluster's nodes only (its pods and its API server), never "
        "the controller (lab.hosts.firewall)",
    )
    parser.add_argument(
        "--monitor-interval",
        type=float,
        default=5.0,
        help="seconds between two rounds of node-joiner monitor-add-nodes (upstream 5)",
    )
    parser.add_argument(
        "--host-arch",
        action="append",
        default=[],
        metavar="HOST=ARCH",
        help="a host's hardware architecture (x86_64, aarch64, ...; default the control plane's), written to the "
        "inventory as its cpu_architecture; repeat for several hosts",
    )


# ----- helpers -------------------------------------------------------------------------------------
def read_lab(state: str) -> dict | None:
    try:
        with open(os.path.join(state, "lab.json"), encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == "Z" else fields[19]  # a zombie is as good as gone


def _ours(lab: dict, pid: int) -> bool:
    """The pid is alive and is still the process the lab recorded (not a reuse of its number)."""
    started = _start_time(pid)
    return started is not None and started == lab.get("pid_start_times", {}).get(str(pid))


def _log_tail(state: str, lines: int = 30) -> str:
    try:
        with open(os.path.join(state, "lab.log"), encoding="utf-8", errors="replace") as handle:
            return "".join(handle.readlines()[-lines:])
    except OSError:
        return "(no lab.log)"


def _control(lab: dict, method: str, path: str, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        lab["control_url"] + path, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)
    except urllib.error.HTTPError as exc:
        raise LabError(f"control API {method} {path}: {exc.code} {exc.read().decode(errors='replace')}") from None
    except OSError as exc:
        raise LabError(f"control API {method} {path} unreachable ({exc}); is the lab running?") from None


def _running_lab(state: str) -> dict:
    lab = read_lab(state)
    if lab is None:
        raise LabError(f"no lab in {state} (no lab.json); start one with: labctl start --state {state}")
    return lab


# ----- subcommands ---------------------------------------------------------------------------------
def cmd_start(args, start_argv: list) -> int:
    state = os.path.abspath(args.state)
    os.makedirs(state, exist_ok=True)
    previous = read_lab(state)
    if previous and any(_ours(previous, pid) for pid in previous.get("pids", [])):
        raise LabError(f"a lab is already running in {state}; stop it first: labctl stop --state {state}")
    lab_json = os.path.join(state, "lab.json")
    if os.path.exists(lab_json):
        os.unlink(lab_json)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [LAB_PACKAGE_PARENT, env.get("PYTHONPATH")]))
    with open(os.path.join(state, "lab.log"), "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "lab.daemon", *start_argv],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise LabError(f"the lab exited with code {process.returncode} while starting:\n{_log_tail(state)}")
        lab = read_lab(state)
        if lab and lab.get("pids", [None])[0] == process.pid:
            print(json.dumps(lab, indent=2))
            print(
                "lab: its hosts are on loopback addresses; run the collection against it with "
                f"OPENSHIFT_AGENT_DAY2_ALLOW_LOOPBACK=1 OPENSHIFT_AGENT_DAY2_AGENT_PORT={lab.get('agent_port')} "
                f"OPENSHIFT_AGENT_DAY2_KUBELET_PORT={lab.get('kubelet_port')} (docs/lab.md)",
                file=sys.stderr,
            )
            return 0
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    raise LabError(f"the lab was not ready after {READY_TIMEOUT:.0f} s:\n{_log_tail(state)}")


def cmd_stop(args) -> int:
    """SIGTERM every recorded process (and the daemon's process group), wait, SIGKILL what is left."""
    state = os.path.abspath(args.state)
    lab = read_lab(state)
    if lab is None:
        return 0
    alive = [pid for pid in lab.get("pids", []) if _ours(lab, pid)]
    daemon = lab["pids"][0] if lab.get("pids") else None
    groups = [daemon] if daemon in alive else []
    for pid in reversed(alive):  # components first, the daemon last
        _signal(pid, signal.SIGTERM)
    for group in groups:
        _signal_group(group, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    while time.monotonic() < deadline and (any(_ours(lab, pid) for pid in alive) or any(map(_group_alive, groups))):
        time.sleep(0.05)
    for pid in alive:
        if _ours(lab, pid):
            _signal(pid, signal.SIGKILL)
    for group in groups:
        _signal_group(group, signal.SIGKILL)
    print(f"lab in {state} stopped")
    return 0


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _signal_group(pgid: int, signum: int) -> None:
    # The daemon leads its own session (start_new_session), so its group holds only lab processes.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signum)


def _group_alive(pgid: int) -> bool:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[2] == str(pgid) and fields[0] != "Z":
                return True
    return False


def cmd_dump(args) -> int:
    print(json.dumps(_control(_running_lab(args.state), "GET", "/state"), indent=2))
    return 0


def cmd_fault(args) -> int:
    lab = _running_lab(args.state)
    if args.clear:
        result = _control(lab, "DELETE", "/faults")
    elif args.faults:
        wanted = {}
        for item in args.faults:
            name, has_value, value = item.partition("=")
            wanted[name] = value if has_value else None
        result = _control(lab, "POST", "/faults", wanted)
    else:
        result = _control(lab, "GET", "/state")["faults"]
    print(json.dumps(result, indent=2))
    return 0


def _configure_fault(parser: argparse.ArgumentParser) -> None:
    from .faults import FAULTS

    parser.add_argument("--state", required=True)
    parser.add_argument("--clear", action="store_true", help="switch every fault off")
    parser.add_argument(
        "faults",
        nargs="*",
        metavar="NAME[=VALUE]",
        help="; ".join(f"{spec.name}: {spec.help}" for spec in FAULTS.values()),
    )


def _configure_state_only(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state", required=True)


def cmd_reboot_done(args) -> int:
    """The hosts have just rebooted into the installed system: their kubelets start (lab/kubelet.py)."""
    print(json.dumps(_control(_running_lab(args.state), "POST", "/reboot-done", {"hosts": args.hosts}), indent=2))
    return 0


def _configure_reboot_done(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state", required=True)
    parser.add_argument("hosts", nargs="+", metavar="HOST", help="inventory host names")


def cmd_rogue_csr(args) -> int:
    """File rogue CSRs (lab/rogue.py); prints the filed names, kinds and identities."""
    body = {"kind": args.kind, "host": args.host}
    print(json.dumps(_control(_running_lab(args.state), "POST", "/rogue-csr", body), indent=2))
    return 0


def _configure_rogue_csr(parser: argparse.ArgumentParser) -> None:
    from .rogue import KINDS

    parser.add_argument("--state", required=True)
    parser.add_argument(
        "kind",
        choices=["all", *KINDS],
        metavar="KIND",
        help="all, or one of: " + "; ".join(f"{name}: {text}" for name, (text, _cn) in KINDS.items()),
    )
    parser.add_argument("host", nargs="?", help="the inventory host to impersonate (default: the first one)")


def cmd_boot(args) -> int:
    """Boot hosts from an ISO or over PXE, as a person at the console would (lab/hosts)."""
    body = {"iso": os.path.abspath(args.iso)} if args.iso else {"pxe": os.path.abspath(args.pxe)}
    body["hosts"] = args.hosts
    print(json.dumps(_control(_running_lab(args.state), "POST", "/hosts/boot", body), indent=2))
    return 0


def _configure_boot(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state", required=True)
    media = parser.add_mutually_exclusive_group(required=True)
    media.add_argument("--iso", help="the add-nodes ISO to boot")
    media.add_argument(
        "--pxe",
        metavar="ARTIFACTS",
        help="PXE boot: node-joiner's boot-artifacts directory, or its node.<arch>-initrd.img",
    )
    parser.add_argument("hosts", nargs="+", metavar="HOST", help="inventory host names")


def cmd_build_iso(args) -> int:
    """An add-nodes ISO from the lab's own node-joiner for the lab inventory (tests, benchmark)."""
    body = {
        "out": os.path.abspath(args.out),
        "hosts": args.hosts,
        "cluster_id": args.cluster_id,
        "expired_token": args.expired_token,
        "dhcp": args.dhcp,
    }
    result = _control(_running_lab(args.state), "POST", "/build-iso", body)
    print(json.dumps({"iso": result["iso"]}, indent=2))  # the token stays out of the output
    return 0


def _configure_build_iso(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state", required=True)
    parser.add_argument("--out", required=True, help="path of the ISO to write")
    parser.add_argument("--cluster-id", help="write this cluster ID instead of the lab's (a foreign ISO)")
    parser.add_argument("--expired-token", action="store_true", help="embed an expired token")
    parser.add_argument(
        "--dhcp", action="append", default=[], metavar="HOST", help="no networkConfig for HOST (it takes a DHCP lease)"
    )
    parser.add_argument("hosts", nargs="*", metavar="HOST", help="inventory hosts in the ISO (default all)")


def cmd_user(args) -> int:
    """A new identity with a bearer token: writes STATE/kubeconfig-NAME (0600); no permissions until bound.

    In the file name every character of NAME but letters, digits, ``.``, ``_`` and ``-`` is a ``-``: the
    kubernetes client splits a kubeconfig path at ``:`` (``system:serviceaccount:ns:sa`` ->
    ``kubeconfig-system-serviceaccount-ns-sa``).
    """
    state = os.path.abspath(args.state)
    lab = _running_lab(state)
    result = _control(lab, "POST", "/users", {"name": args.name, "groups": args.groups})
    from .daemon import atomic_write, kubeconfig  # the kubeconfig every lab identity gets

    with open(os.path.join(state, "ca.crt"), "rb") as handle:
        ca_pem = handle.read()
    path = os.path.join(state, "kubeconfig-" + re.sub(r"[^A-Za-z0-9._-]", "-", args.name))
    atomic_write(path, kubeconfig(lab["api_url"], ca_pem, args.name, result["token"]), private=True)
    print(json.dumps({"kubeconfig": path, "user": result["user"], "groups": result["groups"]}, indent=2))
    return 0


def _configure_user(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state", required=True)
    parser.add_argument("--name", required=True, help="the user name (e.g. alice, system:serviceaccount:NS:NAME)")
    parser.add_argument("--group", dest="groups", action="append", default=[], help="a group of the user (repeatable)")


# name -> (help, configure(parser), handler(args))
SUBCOMMANDS = {
    "start": ("start a lab in the background and wait until it is ready", add_start_options, None),
    "stop": ("stop every process of the lab (idempotent)", _configure_state_only, cmd_stop),
    "dump": ("print objects, request log and approvals as JSON", _configure_state_only, cmd_dump),
    "fault": ("switch faults on (NAME=VALUE) or off (--clear); no argument prints them", _configure_fault, cmd_fault),
    "boot": ("boot hosts from an ISO or over PXE (a person at the console)", _configure_boot, cmd_boot),
    "build-iso": (
        "write an add-nodes ISO for the lab inventory with the lab's node-joiner",
        _configure_build_iso,
        cmd_build_iso,
    ),
    "reboot-done": (
        "these hosts have just rebooted into the installed system (their kubelets start)",
        _configure_reboot_done,
        cmd_reboot_done,
    ),
    "rogue-csr": ("file one rogue CSR of KIND, or one of every kind with 'all'", _configure_rogue_csr, cmd_rogue_csr),
    "user": (
        "write kubeconfig-NAME: a new bearer token for user NAME (and its groups), no permissions until bound",
        _configure_user,
        cmd_user,
    ),
}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="labctl", description="Run the openshift_agent.day2 lab.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_text, configure, _handler) in SUBCOMMANDS.items():
        configure(sub.add_parser(name, help=help_text, description=help_text))
    args = parser.parse_args(argv)
    try:
        if args.command == "start":
            # The daemon re-parses the same options, so new start options need no forwarding code.
            return cmd_start(args, argv[argv.index("start") + 1 :])
        return SUBCOMMANDS[args.command][2](args)
    except LabError as exc:
        print(f"labctl {args.command}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
