"""The networks users have, against the lab: a DHCP host (mac_address and ip only) joins beside static ones with no
networkConfig in what node-joiner receives, and an oc nodes-config.yaml written the way oc's documentation shows it
joins its hosts. The refusals (a DHCP host without ip, a host in the file and the inventory, an unknown field, an
sshKey against day2_ssh_key) are rows of bad_inputs.yml."""

import json

import yaml
from conftest import REPO, lab_env, run_playbook
from test_add_workers import console_boots_when_media_are_ready, playbook_args

PLAYBOOK = REPO / "playbooks" / "add_workers.yml"
EXAMPLE = "playbooks/nodes-config.example.yaml"  # relative, as a user gives it: from the current directory
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f lab@nodes-config"
START = ("--hosts", "3", "--install-seconds", "6", "--agent-port", "0", "--kubelet-port", "0")


def inventory_file(lab, path, hosts):
    document = {"all": {"vars": {"kubeconfig": lab.kubeconfig}, "children": {"new_workers": {"hosts": hosts}}}}
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return str(path)


def run(lab, tmp_path, hosts, *extra):
    workdir = tmp_path / "work"
    args = playbook_args(lab, workdir, *extra)
    args[args.index(lab.inventory)] = inventory_file(lab, tmp_path / "inventory.yml", hosts)
    console = console_boots_when_media_are_ready(lab, workdir, [host["name"] for host in lab.info["hosts"]])
    rc, output = run_playbook(PLAYBOOK, *args, env=lab_env(lab))
    console.join(timeout=5)
    assert rc == 0, output[-6000:]
    return output


def ready_nodes(lab):
    nodes = [o for o in lab.dump()["objects"] if o["kind"] == "Node"]
    return {
        node["metadata"]["name"]
        for node in nodes
        if any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"]["conditions"])
    }


def received(lab):
    """The nodes-config.yaml node-joiner read, of the run's last pod: {hostname: host entry}, and the whole file."""
    inputs = lab.dump()["node_joiner_inputs"]
    assert inputs, "node-joiner received nothing"
    config = yaml.safe_load(inputs[-1]["nodes_config"])
    return {host["hostname"]: host for host in config["hosts"]}, config


def test_a_dhcp_host_joins_with_two_static_ones_and_gets_no_network_config(lab_factory, tmp_path):
    lab = lab_factory(*START)
    hosts = {host["name"]: {k: v for k, v in host.items() if k != "name"} for host in lab.info["hosts"]}
    dhcp = hosts["extra-worker-0"]
    hosts["extra-worker-0"] = {"mac_address": dhcp["mac_address"], "ip": dhcp["ip"]}  # a DHCP host: nothing else
    output = run(lab, tmp_path, hosts)

    assert ready_nodes(lab) >= set(hosts), output[-4000:]
    entries, _config = received(lab)
    assert sorted(entries) == sorted(hosts)
    assert "networkConfig" not in entries["extra-worker-0"]
    assert entries["extra-worker-0"]["interfaces"] == [{"name": "eth0", "macAddress": dhcp["mac_address"]}]
    for name in ("extra-worker-1", "extra-worker-2"):
        addresses = entries[name]["networkConfig"]["interfaces"][0]["ipv4"]["address"]
        assert addresses == [{"ip": hosts[name]["ip"], "prefix-length": 24}], entries[name]
    # The lab's hosts: the DHCP one took its reservation's lease, the others their static addresses.
    networks = {host["name"]: host["network"] for host in lab.dump()["hosts"]}
    assert networks["extra-worker-0"] == {"method": "dhcp", "addresses": [dhcp["ip"]]}
    assert networks["extra-worker-1"] == {"method": "static", "addresses": [hosts["extra-worker-1"]["ip"]]}
    node = next(o for o in lab.dump()["objects"] if o["kind"] == "Node" and o["metadata"]["name"] == "extra-worker-0")
    assert {"type": "InternalIP", "address": dhcp["ip"]} in node["status"]["addresses"]


def test_a_nodes_config_written_as_ocs_documentation_shows_joins_its_hosts(lab_factory, tmp_path):
    lab = lab_factory(*START)
    # The example as it is, with an sshKey (a field of the documented nodes-config too) in a copy beside it.
    example = yaml.safe_load((REPO / EXAMPLE).read_text())
    assert sorted(example["hosts"][0]) == ["hostname", "interfaces", "networkConfig", "rootDeviceHints"]
    with_key = tmp_path / "nodes-config.yaml"
    with_key.write_text((REPO / EXAMPLE).read_text() + "sshKey: %s\n" % SSH_KEY)
    third = {k: v for k, v in lab.info["hosts"][2].items() if k != "name"}
    output = run(lab, tmp_path, {"extra-worker-2": third}, "-e", json.dumps({"day2_nodes_config": str(with_key)}))

    plan = " ".join(output.split())  # (the callback may wrap long lines)
    assert "Of them from the nodes-config %s: extra-worker-0, extra-worker-1" % with_key in plan, output[-6000:]
    assert ready_nodes(lab) >= {"extra-worker-0", "extra-worker-1", "extra-worker-2"}, output[-4000:]
    entries, config = received(lab)
    assert config["sshKey"] == SSH_KEY  # sshKey went where day2_ssh_key goes
    for host in example["hosts"]:
        entry = entries[host["hostname"]]
        assert entry["networkConfig"] == host["networkConfig"] and entry["rootDeviceHints"] == host["rootDeviceHints"]
        assert entry["interfaces"] == host["interfaces"]
    networks = {host["name"]: host["network"]["method"] for host in lab.dump()["hosts"]}
    assert networks == {"extra-worker-0": "static", "extra-worker-1": "static", "extra-worker-2": "static"}
