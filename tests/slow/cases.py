"""The resilience matrix, one Row per case: faults, interrupts (each followed by a re-run) and spoofs.

The ``outcome`` column is copied into docs/resilience.md (test_matrix checks that they agree).
"""

import signal

from matrix import (
    INSTALLING,
    Row,
    any_approval,
    building,
    fault,
    kubelet_filed,
    rebooting,
    rogue,
    rogue_cli,
    transferring,
)

BOOTSTRAPPER = "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper"
WORKER0 = "host extra-worker-0 (127.0.111.20)"

FAULTS = [
    Row("api_error_rate=0.1", "completes", before=(fault(api_error_rate=0.1),), answered=("500", "503")),
    Row("api_reset_rate=0.3", "completes", before=(fault(api_reset_rate=0.3),), answered=("reset",)),
    Row("api_delay=1", "completes", before=(fault(api_delay=1),)),
    Row("watch_cut_seconds=1", "completes", before=(fault(watch_cut_seconds=1),)),
    Row(
        "agent_unreachable from the start",
        "completes (the kubelet port tells that the host rebooted)",
        before=(fault(agent_unreachable=40),),
        hides=("extra-worker-0: installing; agent:",),
    ),
    Row(
        "agent_unreachable mid-install",
        "completes",
        # long enough that the join step sees the install after the boot step's look (one round of the monitor)
        install_seconds=20,
        during=((INSTALLING, fault(agent_unreachable=8)),),
        shows=("extra-worker-0: installing; agent: installing-in-progress",),
    ),
    Row(
        "validation_failing",
        "fails naming the host and the failing validation",
        names=(WORKER0, "validation ignition-downloadable has been failing", "Ignition is not downloadable"),
        before=(fault(validation_failing="ignition-downloadable"),),
    ),
    Row(
        "install_error",
        "fails naming the host, the stage and the agent's error",
        names=(WORKER0 + " failed: status error", "Writing image to disk"),
        before=(fault(install_error="Writing image to disk"),),
    ),
    Row(
        "wrong_boot_order",
        "fails naming the host and saying to fix the boot order",
        names=(WORKER0, "installing-pending-user-action", "fix the boot order so it boots from disk"),
        before=(fault(wrong_boot_order=1),),
    ),
    Row(
        "token_rejected",
        "fails naming the host and the refused token",
        names=(WORKER0 + ": the agent at 127.0.111.20", "refused the token"),
        install_seconds=30,  # the agent still runs when the run asks it, after the boot step's look
        before=(fault(token_rejected=1),),
    ),
    Row(
        "node-joiner failure (bad_host_config)",
        "fails naming the node-joiner stage and its error",
        names=("node-joiner failed at stage create-manifest", "Invalid IPv4 network prefix length"),
        before=(fault(nodejoiner="bad_host_config"),),
    ),
    Row(
        "exec cut (exec_cut_after_bytes)",
        "completes (the transfer is retried)",
        before=(fault(exec_cut_after_bytes=1000000),),
        spent=("exec_cut_after_bytes",),
    ),
    Row(
        "exec corruption (exec_corrupt)",
        "completes (the checksum mismatch is retried)",
        before=(fault(exec_corrupt=1),),
        spent=("exec_corrupt",),
    ),
    Row(
        "deny on namespace delete",
        "fails naming the namespace; the next run removes it and completes",
        names=("clean-up of its node-joiner run failed", "Namespace/openshift-node-joiner-"),
        before=(fault(deny="all:delete:namespaces"),),
        rerun=True,
    ),
    Row(
        "one host never booting",
        "fails naming the missing host after day2_boot_timeout; the other host is Ready",
        names=("extra-worker-1: nothing answered within day2_boot_timeout (20 s)",),
        hosts=2,
        boot=1,
        extra={"day2_boot_timeout": 20},
        ready=("extra-worker-0",),
    ),
]

# The moment of each interrupt, and what keeps the run there long enough to be caught.
PHASES = [
    ("the build", building, (fault(nodejoiner="timeout"),), 4),
    ("the transfer", transferring, (fault(exec_bytes_per_second=1000000),), 4),  # about 8 s for the 8 MiB ISO
    ("the install wait", INSTALLING, (), 8),
    ("the approval", any_approval, (fault(kubelet_ready_delay=6),), 4),
]

INTERRUPTS = [
    Row(
        "%s during %s" % (signame, phase),
        "completes on re-run, 0 duplicate approvals",
        install_seconds=seconds,
        before=before,
        interrupt=(trigger, signum),
    )
    for signame, signum in (("SIGTERM", signal.SIGTERM), ("SIGKILL", signal.SIGKILL))
    for phase, trigger, before, seconds in PHASES
]

SPOOFS = [
    Row(
        'client CSR for an expected host filed at "Rebooting"',
        "completes; the spoof is not approved",
        install_seconds=20,  # "Rebooting" lasts 15 % of the install: 3 s
        during=((rebooting(), rogue("spoof-client")),),
    ),
    Row(
        "replay of a pending genuine CSR",
        "completes; the replay (same key) and the genuine CSR are both approved",
        extra={"day2_settle_seconds": 6},
        during=((kubelet_filed(), rogue("replay-client")),),
    ),
    Row(
        "second key after approval",
        "fails naming the rogue CSR and its requestor; the spoof is not approved",
        names=("a second public key for extra-worker-0:", "requested by %s" % BOOTSTRAPPER, "oc delete csr"),
        before=(fault(kubelet_ready_delay=20),),
        during=((kubelet_filed(approved_only=True), rogue("spoof-client")),),
    ),
    Row(
        "labctl rogue-csr all",
        "completes; none of the rogue CSRs is approved",
        hosts=2,
        before=(rogue_cli("all"),),
    ),
]

ROWS = FAULTS + INTERRUPTS + SPOOFS
