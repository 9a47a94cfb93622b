"""Live progress: while the hosts install, csr_approve prints every change of a host's status, stage and
percentage as it happens, with a timestamp and the host's name, at default verbosity (the default callback, as
in a terminal or an AWX job), and ends with one summary line per host.

The lab's day-2 hosts go through assisted-service's worker stages (lab/versions.py DAY2_WORKER_STAGES;
``Rebooting`` is stored as ``Done``); with 20 s installs and a 1 s poll, every stage lasts about 4 s, so every
stage of every host must show up, and before the join task has ended.
"""

import re

from conftest import lab_env, run_playbook
from lab.versions import DAY2_WORKER_STAGES
from test_add_workers import PLAYBOOK, console_boots_when_media_are_ready, playbook_args

TIMESTAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z"
SHOWN_STAGES = [("Done" if stage == "Rebooting" else stage) for stage in DAY2_WORKER_STAGES]


def test_every_stage_of_every_host_is_printed_as_it_happens(lab_factory, tmp_path):
    lab = lab_factory("--hosts", "2", "--install-seconds", "20", "--agent-port", "0", "--kubelet-port", "0")
    hosts = [h["name"] for h in lab.info["hosts"]]
    workdir = tmp_path / "work"
    console = console_boots_when_media_are_ready(lab, workdir, hosts)
    rc, output = run_playbook(
        PLAYBOOK, *playbook_args(lab, workdir), env=dict(lab_env(lab), ANSIBLE_STDOUT_CALLBACK="default")
    )
    console.join(timeout=5)
    assert rc == 0, output[-6000:]
    lines = output.splitlines()
    task_end = next(
        i for i, line in enumerate(lines) if line.startswith("TASK [openshift_agent.day2.day2 : Report every new node")
    )
    for host in hosts:
        for stage in SHOWN_STAGES:
            pattern = re.compile(r"^%s %s: .*agent: [a-z-]+ at %s \(\d+%%\)" % (TIMESTAMP, host, re.escape(stage)))
            seen = [i for i, line in enumerate(lines) if pattern.search(line)]
            assert seen and seen[0] < task_end, (host, stage, "\n".join(lines[:task_end]))
        summary = [line for line in lines[:task_end] if line.startswith("summary %s: joined (" % host)]
        assert summary and "approved in this run: client " in summary[0] and "serving " in summary[0], summary
