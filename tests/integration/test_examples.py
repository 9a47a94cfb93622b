"""Every shipped example and every inventory and playbook snippet of the README and the user guide, run the way a
user runs them: from the release tarball, against the lab.

The tarball is the one ``ansible-galaxy collection build`` writes (``.ci/tarball.py --keep``, which also checks what
it holds). It is installed with ``ansible-galaxy collection install --offline`` into an empty collections path; the
dependency collections kubernetes.core and community.general are those of the PyPI ``ansible`` package in .venv
(its site-packages ``ansible_collections``), found through ANSIBLE_COLLECTIONS_PATH as an installed collection is.
Every run calls a playbook by FQCN (``ansible-playbook openshift_agent.day2.add_workers``) from a directory outside
the repository, with an empty ansible.cfg and neither the repository nor its .collections link on any path.

A snippet is a fenced block right after a ``<!-- example: NAME -->`` line; SNIPPETS lists them, and every fenced
block of the two documents that holds an inventory, a play or an ``ansible-playbook`` command must be one of them.
What is adapted to the lab, and nothing else:

- a new worker's network values (LAB_KEYS: ``mac_address``, ``ip``, ``prefix_length``, ``gateway``,
  ``dns_servers``), each present key replaced by the lab host's of the same name (extra-worker-N), so a DHCP host
  stays a DHCP host;
- the login: ``-e kubeconfig=<the lab's kubeconfig>`` (a play variable, which the playbooks read before the group's);
- the work directory and the poll interval: ``-e day2_workdir=<a temporary directory> -e day2_wait_sleep=1``;
- the files a command names (``inventory``, ``inventory.yml``, ``agent-config.yaml``, ``nodes-config.yaml``): the
  adapted inventory, and the shipped examples as the tarball installed them;
- a node name a command names that the lab does not have (``worker-3``): the lab's extra-worker-0;
- the controller's environment: the lab's loopback switch and ports (docs/lab.md) and .venv's Python.

A person at the lab's console boots the hosts once the ISO is complete, as the run tells them to. Each run ends with
the hosts Ready. ``ansible-doc`` shows every module of the installed tarball; the EXAMPLES are checked against the
argument specs by tests/unit/plugins/action/test_module_examples.py.
"""

import json
import re
import shlex

import pytest
import yaml
from conftest import REPO, site_packages
from test_add_workers import console_boots_when_media_are_ready

PREFIX = "openshift_agent.day2."
SNIPPET = re.compile(r"^<!-- example: ([\w-]+) -->\n```[^\n]*\n(.*?)^```", re.M | re.S)
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
SNIPPETS = {
    "README.md": {"readme-command", "readme-inventory", "readme-task"},
    "docs/user-guide.md": {
        "guide-command",
        "guide-login-play",
        "guide-inventory",
        "guide-dhcp-host",
        "guide-agent-config",
        "guide-nodes-config",
        "guide-labels",
        "guide-replace",
    },
}
LAB_KEYS = ("mac_address", "ip", "prefix_length", "gateway", "dns_servers")
FAST = ("--install-seconds", "5", "--agent-port", "0", "--kubelet-port", "0")


def snippets(relative):
    return dict(SNIPPET.findall((REPO / relative).read_text()))


def lab_hosts(lab):
    return {host["name"]: host for host in lab.info["hosts"]}


def to_lab(inventory, lab):
    """The inventory with each new worker's network values (LAB_KEYS present in it) those of the lab's host."""
    hosts = inventory["all"]["children"]["new_workers"]["hosts"]
    for name, host in hosts.items():
        assert name in lab_hosts(lab), "%s is not a host of the lab (%s)" % (name, ", ".join(lab_hosts(lab)))
        for key in LAB_KEYS:
            if key in host:
                host[key] = lab_hosts(lab)[name][key]
    return inventory


def write(path, document):
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def command_of(snippet, files, names=None):
    """The ansible-playbook command of a snippet, its file and node names replaced by the lab's (``files``)."""
    words = shlex.split(snippet.strip())
    assert words[0] == "ansible-playbook" and words[1].startswith(PREFIX), "not an FQCN playbook run: %s" % snippet
    replaced = []
    for word in words:
        if word in files:
            word = str(files[word])
        elif "=" in word and word.split("=", 1)[1] in files:
            word = "%s=%s" % (word.split("=", 1)[0], files[word.split("=", 1)[1]])
        for old, new in (names or {}).items():
            word = word.replace("=" + old, "=" + new)
        replaced.append(word)
    return replaced


def adapted(command, lab, workdir):
    return [
        *command,
        "-e",
        "kubeconfig=%s" % lab.kubeconfig,
        "-e",
        "day2_workdir=%s" % workdir,
        "-e",
        "day2_wait_sleep=1",
    ]


def ready_nodes(lab):
    return {
        o["metadata"]["name"]
        for o in lab.dump()["objects"]
        if o["kind"] == "Node"
        and any(c["type"] == "Ready" and c["status"] == "True" for c in o["status"]["conditions"])
    }


def nodes(lab):
    return {o["metadata"]["name"]: o for o in lab.dump()["objects"] if o["kind"] == "Node"}


def run_add_workers(installed, lab, command, workdir, hosts):
    console = console_boots_when_media_are_ready(lab, workdir, sorted(hosts))
    rc, output = installed.run(adapted(command, lab, workdir), lab=lab)
    console.join(timeout=5)
    assert rc == 0, output[-6000:]
    assert set(hosts) <= ready_nodes(lab), output[-4000:]
    return output


# ================================================================ the documents and the installed tarball


def test_every_inventory_play_and_command_snippet_of_the_docs_is_marked_and_run():
    for relative, names in SNIPPETS.items():
        text = (REPO / relative).read_text()
        assert set(snippets(relative)) == names, relative
        marked = {block for _name, block in SNIPPET.findall(text)}
        for block in FENCE.findall(text):
            runnable = (
                "ansible-playbook" in block
                or "new_workers" in block
                or re.search(r"^\s*-? *%s\w+:" % re.escape(PREFIX), block, re.M)
            )
            assert not runnable or block in marked, "%s: a snippet without <!-- example: NAME -->:\n%s" % (
                relative,
                block,
            )


def test_the_run_uses_the_installed_tarball_and_nothing_of_the_repository(installed):
    # The collections path: the installed tarball, and .venv's site-packages (kubernetes.core, community.general).
    assert installed.env()["ANSIBLE_COLLECTIONS_PATH"].split(":") == [str(installed.collections), site_packages()]
    assert not str(installed.root).startswith(str(REPO))
    rc, output = installed.run(["ansible-galaxy", "collection", "list", "--format", "json"])
    assert rc == 0, output
    listed, _end = json.JSONDecoder().raw_decode(output[output.index("{") :])  # warnings follow on stderr
    where = [path for path, found in listed.items() if "openshift_agent.day2" in found]
    assert where == [str(installed.collections / "ansible_collections")], listed
    assert {"kubernetes.core", "community.general"} <= {name for found in listed.values() for name in found}
    for example in ("inventory.example.yml", "agent-config.example.yaml", "nodes-config.example.yaml"):
        assert (installed.path / "playbooks" / example).read_text() == (REPO / "playbooks" / example).read_text()


def test_ansible_doc_shows_every_module_of_the_tarball(installed):
    modules = sorted(p.stem for p in (installed.path / "plugins" / "modules").glob("*.py") if p.stem != "__init__")
    assert len(modules) == len(list((REPO / "plugins" / "modules").glob("*.py")))
    rc, output = installed.run(["ansible-doc", "--json", "-t", "module", *(PREFIX + m for m in modules)])
    assert rc == 0 and "[WARNING]" not in output and "[ERROR]" not in output, output[-4000:]
    docs = json.loads(output)
    assert sorted(docs) == [PREFIX + m for m in modules]
    for name, doc in docs.items():
        assert doc["doc"]["short_description"] and doc["examples"].strip() and doc["return"], name
    for module in modules:  # the text a user reads
        rc, output = installed.run(["ansible-doc", "-t", "module", PREFIX + module])
        assert rc == 0 and "EXAMPLES:" in output and "[WARNING]" not in output, output[-2000:]


# ================================================================ the shipped examples


def test_the_shipped_inventory_example(installed, lab_factory, tmp_path):
    lab = lab_factory("--hosts", "2", *FAST)
    example = yaml.safe_load((installed.path / "playbooks" / "inventory.example.yml").read_text())
    inventory = write(tmp_path / "inventory.yml", to_lab(example, lab))
    command = ["ansible-playbook", PREFIX + "add_workers", "-i", str(inventory)]
    run_add_workers(installed, lab, command, tmp_path / "work", example["all"]["children"]["new_workers"]["hosts"])


@pytest.mark.parametrize(
    "option, example", [("agent_config", "agent-config.example.yaml"), ("nodes_config", "nodes-config.example.yaml")]
)
def test_the_shipped_host_files_as_the_user_guide_runs_them(installed, lab_factory, tmp_path, option, example):
    """The user guide's command for a day-1 agent-config.yaml (nodes-config.yaml), with the shipped example as the
    file and an inventory of only the login, as the guide says."""
    lab = lab_factory("--hosts", "2", *FAST)
    path = installed.path / "playbooks" / example
    hosts = {host["hostname"] for host in yaml.safe_load(path.read_text())["hosts"]}
    inventory = write(tmp_path / "inventory", {"all": {"vars": {"kubeconfig": lab.kubeconfig}}})
    snippet = snippets("docs/user-guide.md")["guide-" + option.replace("_", "-")]
    command = command_of(snippet, {"inventory": inventory, option.replace("_", "-") + ".yaml": path})
    assert "day2_%s=%s" % (option, path) in command
    run_add_workers(installed, lab, command, tmp_path / "work", hosts)


# ================================================================ the README's and the user guide's snippets


def test_the_readme_snippets(installed, lab_factory, tmp_path):
    lab = lab_factory("--hosts", "1", *FAST)
    readme = snippets("README.md")
    document = yaml.safe_load(readme["readme-inventory"])
    inventory = write(tmp_path / "inventory.yml", to_lab(document, lab))
    command = command_of(readme["readme-command"], {"inventory.yml": inventory})
    run_add_workers(installed, lab, command, tmp_path / "work", {"extra-worker-0"})

    # The task snippet, in a play of its own (its kubeconfig is the lab's).
    task = yaml.safe_load(readme["readme-task"])
    task[0][PREFIX + "day1_facts"]["kubeconfig"] = lab.kubeconfig
    play = write(
        tmp_path / "task.yml", [{"name": "README", "hosts": "localhost", "gather_facts": False, "tasks": task}]
    )
    rc, output = installed.run(["ansible-playbook", str(play), "-v"], lab=lab, cwd=tmp_path)
    assert rc == 0 and '"supported": true' in output, output[-4000:]


def test_the_user_guide_inventory_dhcp_host_labels_and_login_play(installed, lab_factory, tmp_path):
    lab = lab_factory("--hosts", "2", *FAST)
    guide = snippets("docs/user-guide.md")
    document = yaml.safe_load(guide["guide-inventory"])
    document["all"]["children"]["new_workers"]["hosts"].update(yaml.safe_load(guide["guide-dhcp-host"]))
    labels = yaml.safe_load(guide["guide-labels"])
    for group, definition in labels.items():
        document["all"]["children"].setdefault(group, {}).update(definition)
    inventory = write(tmp_path / "inventory.yml", to_lab(document, lab))
    dhcp = document["all"]["children"]["new_workers"]["hosts"]["extra-worker-1"]
    assert sorted(dhcp) == ["ip", "mac_address"], dhcp  # still a DHCP host

    rc, output = installed.run(
        [
            "ansible-playbook",
            str(write(tmp_path / "login.yml", yaml.safe_load(guide["guide-login-play"]))),
            "-e",
            "kubeconfig=%s" % lab.kubeconfig,
        ],
        lab=lab,
        cwd=tmp_path,
    )
    assert rc == 0 and "failed=0" in output, output[-4000:]

    command = command_of(guide["guide-command"], {"inventory.yml": inventory})
    run_add_workers(installed, lab, command, tmp_path / "work", {"extra-worker-0", "extra-worker-1"})
    wanted = labels["new_workers"]["vars"]
    for name, node in nodes(lab).items():
        if name.startswith("extra-worker-"):
            assert wanted["node_labels"].items() <= node["metadata"]["labels"].items(), name
            taints = {(t["key"], t["effect"]) for t in node["spec"].get("taints", [])}
            assert {(t["key"], t["effect"]) for t in wanted["node_taints"]} <= taints, name
    networks = {host["name"]: host["network"] for host in lab.dump()["hosts"]}
    assert networks["extra-worker-1"]["method"] == "dhcp", networks


def test_the_user_guide_replace_command(installed, lab_factory, tmp_path):
    """The guide's inventory, its host joined, then its machine replaced: the guide's replace_worker command."""
    # An install long enough for the join step to hear the new installation's agent (as test_scenarios.py says).
    lab = lab_factory("--hosts", "1", "--install-seconds", "12", "--agent-port", "0", "--kubelet-port", "0")
    guide = snippets("docs/user-guide.md")
    inventory = write(tmp_path / "inventory.yml", to_lab(yaml.safe_load(guide["guide-inventory"]), lab))
    add = command_of(guide["guide-command"], {"inventory.yml": inventory})
    run_add_workers(installed, lab, add, tmp_path / "first", {"extra-worker-0"})
    old = nodes(lab)["extra-worker-0"]["metadata"]["uid"]
    lab.control("POST", "/hosts/power-off", {"hosts": ["extra-worker-0"]})

    replace = command_of(guide["guide-replace"], {"inventory.yml": inventory}, names={"worker-3": "extra-worker-0"})
    assert "day2_replace_node=extra-worker-0" in replace
    run_add_workers(installed, lab, replace, tmp_path / "second", {"extra-worker-0"})
    assert nodes(lab)["extra-worker-0"]["metadata"]["uid"] != old
