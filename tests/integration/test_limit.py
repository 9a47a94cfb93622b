"""--limit as in any playbook (AWX's Limit field): playbooks/add_workers.yml still runs with a limit that leaves
localhost out, adds only the new workers the limit selects, and neither builds for, boots, waits on nor fails over
the others; a limit that selects no new worker is refused before any write, naming the limit and the group."""

from pathlib import Path

import pytest
import yaml
from conftest import REPO, lab_env, run_playbook
from test_add_workers import console_boots_when_media_are_ready, playbook_args
from test_dhcp_and_nodes_config import ready_nodes, received

PLAYBOOK = REPO / "playbooks" / "add_workers.yml"
START = ("--hosts", "2", "--install-seconds", "4", "--agent-port", "0", "--kubelet-port", "0")


@pytest.mark.parametrize("limit", ["extra-worker-1", "localhost,extra-worker-1"])
def test_a_limit_adds_only_the_hosts_it_selects(lab_factory, tmp_path, limit):
    lab = lab_factory(*START)
    workdir = tmp_path / "work"
    # Only extra-worker-1 is ever booted: a run that waited on extra-worker-0 would fail.
    console = console_boots_when_media_are_ready(lab, workdir, ["extra-worker-1"])
    rc, output = run_playbook(PLAYBOOK, *playbook_args(lab, workdir, "--limit", limit), env=lab_env(lab))
    console.join(timeout=5)
    assert rc == 0, output[-6000:]
    said = " ".join(output.split())
    assert "skipping: no hosts matched" not in said
    assert "Limit %s: left out extra-worker-0" % limit in said, said[-4000:]
    entries, _config = received(lab)
    assert sorted(entries) == ["extra-worker-1"]  # the ISO is built for the selected host only
    assert "extra-worker-1" in ready_nodes(lab) and "extra-worker-0" not in ready_nodes(lab)
    assert "extra-worker-0" not in said.split("PLAY RECAP", 1)[1]  # neither run on nor counted as failed


def test_a_limit_that_selects_no_new_worker_is_refused_before_any_write(lab_factory, tmp_path):
    lab = lab_factory("--hosts", "2")
    document = yaml.safe_load(Path(lab.inventory).read_text())
    document["all"]["children"]["bastions"] = {"hosts": {"bastion-0": {}}}
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump(document))
    args = playbook_args(lab, tmp_path / "work", "--limit", "bastions")
    args[args.index(lab.inventory)] = str(inventory)
    lab.reset_log()
    rc, output = run_playbook(PLAYBOOK, *args, env=lab_env(lab))
    said = " ".join(output.split())
    assert rc != 0, said[-4000:]
    assert (
        'inventory: field "limit" value "bastions" selects no new worker of group new_workers (it holds '
        "extra-worker-0, extra-worker-1); limit the run to hosts of group new_workers" in said
    ), said[-4000:]
    assert lab.writes() == []
