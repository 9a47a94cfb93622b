"""playbooks/add_workers.yml booting through the lab's HTTPS sushy-emulator with no day2_iso_url: the run serves
the ISO itself (iso_serve), boots every host through community.general's redfish modules, ejects each CD only
once its disk is written, and leaves no server process behind, even when the run is killed mid-boot."""

import json
import os
import re
import signal
import ssl
import subprocess
import urllib.request
from pathlib import Path

import yaml
from conftest import REPO, VENV_BIN, ansible_env, lab_env, run_playbook
from lab.hosts import free_port
from lab.waiting import wait_for
from test_add_workers import PLAYBOOK, playbook_args

WRITTEN = ("Waiting for control plane", "Rebooting", "Done", "Joined", "Configuring", "Waiting for ignition")


def redfish_args(lab, workdir):
    return [
        *playbook_args(lab, workdir),
        "-e",
        "day2_boot_method=redfish",
        "-e",
        "day2_serve_address=127.0.0.1:0",
        # Verify the emulator with the lab's CA (the inventory says bmc_verify_certs: false).
        "-e",
        "bmc_verify_certs=true",
        "-e",
        "day2_bmc_ca_path=%s" % lab.info["redfish"]["ca_path"],
    ]


def servers_of(workdir):
    """Processes of the collection's ISO server serving from ``workdir``."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                command = handle.read().split(b"\0")
        except OSError:
            continue
        if any(part.endswith(b"_boot/serve.py") for part in command) and str(workdir).encode() in b" ".join(command):
            found.append(int(pid))
    return found


def redfish_state(lab):
    return lab.dump()["redfish"]


def test_redfish_run_serves_the_iso_and_ejects_after_each_disk_is_written(lab_factory, tmp_path):
    lab = lab_factory("--hosts", "2", "--redfish", "--agent-port", "0", "--kubelet-port", "0", "--install-seconds", "6")
    workdir = tmp_path / "work"
    rc, output = run_playbook(PLAYBOOK, *redfish_args(lab, workdir), env=lab_env(lab), timeout=600)
    assert rc == 0, output[-6000:]
    said = " ".join(output.split())  # the callback may wrap a message
    assert "Serving %s/node.x86_64.iso over HTTP to the BMCs at http://127.0.0.1:" % workdir in said
    assert "/(secret)/node.x86_64.iso" in said
    assert re.search(r"listening on 127\.0\.0\.1:\d+ only", said), said  # one address, not every one
    assert lab.info["redfish"]["password"] not in output
    state = redfish_state(lab)
    names = sorted(h["name"] for h in lab.info["hosts"])
    hosts = {h["name"]: h for h in lab.control("GET", "/hosts")}
    assert all(hosts[name]["booted_by"] == "redfish" for name in names), hosts
    # Each BMC read the ISO with range requests, from the run's own server, at its secret path.
    assert all(state["ranges"].get(name, 0) >= 1 for name in names), state
    booted = set(state["booted"].values())
    assert len(booted) == 1 and booted.pop().startswith("http://127.0.0.1:")
    # One eject per host, each after its disk was written.
    ejected = {e["host"]: e for e in state["ejects"]}
    assert sorted(ejected) == names and len(state["ejects"]) == 2, state["ejects"]
    for eject in state["ejects"]:
        assert eject["phase"] == "rebooted" or eject["stage"] in WRITTEN, eject
    # The BMCs were driven through community.general's modules: the emulator saw their requests.
    emulator = (lab.state / "redfish" / "emulator.log").read_text()
    for request in ("VirtualMedia.InsertMedia", "VirtualMedia.EjectMedia", "ComputerSystem.Reset", "PATCH /redfish"):
        assert request in emulator, request
    # The server stopped when the disks were written; nothing is left.
    log = (workdir / "iso-serve.log").read_text()
    assert log.strip().endswith("exit: stopped")
    assert not (workdir / "iso-serve.pid").exists() and not (workdir / "iso-serve.token").exists()
    assert servers_of(workdir) == []
    assert "status=206" in log and "range=bytes=" in log


def test_killing_the_run_mid_boot_leaves_no_server(lab_factory, tmp_path):
    lab = lab_factory(
        "--hosts", "2", "--redfish", "--agent-port", "0", "--kubelet-port", "0", "--install-seconds", "60"
    )
    workdir = tmp_path / "work"
    command = [str(VENV_BIN / "ansible-playbook"), str(PLAYBOOK), *redfish_args(lab, workdir)]
    run = subprocess.Popen(
        command,
        cwd=str(REPO),
        env=ansible_env(**lab_env(lab)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        # Mid-boot: the server runs and a BMC booted its host from it.
        wait_for(lambda: (workdir / "iso-serve.pid").exists() and redfish_state(lab)["booted"], timeout=300)
        server = json.loads((workdir / "iso-serve.pid").read_text())["pid"]
        assert servers_of(workdir) == [server]
        os.killpg(run.pid, signal.SIGKILL)
        run.wait(timeout=30)
        # The server is in its own session (the kill did not reach it): it saw the run go and exited.
        wait_for(lambda: servers_of(workdir) == [], timeout=10)
        assert "exit: the run (pid %d) is gone" % run.pid in (workdir / "iso-serve.log").read_text()
        assert not (workdir / "iso-serve.token").exists()
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()


def test_a_host_back_in_the_iso_is_named_with_the_fix_and_no_server_is_left(lab_factory, tmp_path):
    lab = lab_factory("--hosts", "2", "--redfish", "--agent-port", "0", "--kubelet-port", "0", "--install-seconds", "6")
    lab.control("POST", "/faults", {"wrong_boot_order": "extra-worker-0:1"})
    workdir = tmp_path / "work"
    rc, output = run_playbook(PLAYBOOK, *redfish_args(lab, workdir), env=lab_env(lab), timeout=600)
    said = " ".join(output.split())
    assert rc != 0, output[-4000:]
    assert "host extra-worker-0" in said and "installing-pending-user-action" in said
    assert "eject the virtual media or fix the boot order so it boots from disk" in said
    # The run failed in the join step: the server saw the run end and exited.
    wait_for(lambda: servers_of(workdir) == [], timeout=10)
    assert not (workdir / "iso-serve.token").exists()


def agent_config_with_bmcs(lab, tmp_path, wrong_password_for=None):
    """The shipped example agent-config.yaml, each host given the bmc settings of the lab's BMC emulator (its
    address, username and password in the file, as a day-1 file holds them), and an inventory of the login only."""
    document = yaml.safe_load((REPO / "playbooks" / "agent-config.example.yaml").read_text())
    inventory = yaml.safe_load(Path(lab.inventory).read_text())["all"]["children"]["new_workers"]["hosts"]
    for host in document["hosts"]:
        given = inventory[host["hostname"]]
        password = "wrong-password" if host["hostname"] == wrong_password_for else given["bmc_password"]
        host["bmc"] = {"address": given["bmc_address"], "username": given["bmc_username"], "password": password}
    path = tmp_path / "agent-config.yaml"
    path.write_text(yaml.safe_dump(document))
    login = tmp_path / "inventory.yml"
    login.write_text(yaml.safe_dump({"all": {"vars": {"kubeconfig": lab.kubeconfig}}}))
    return path, login


def agent_config_args(lab, workdir, config, login):
    args = redfish_args(lab, workdir)
    args[args.index(lab.inventory)] = str(login)
    return [*args, "-e", "day2_agent_config=%s" % config]


def test_agent_config_hosts_boot_through_the_bmcs_of_their_file(lab_factory, tmp_path):
    """Hosts that exist only in an agent-config.yaml: their bmc.password is read from the file at the moment of use."""
    lab = lab_factory("--hosts", "2", "--redfish", "--agent-port", "0", "--kubelet-port", "0", "--install-seconds", "6")
    config, login = agent_config_with_bmcs(lab, tmp_path)
    workdir = tmp_path / "work"
    rc, output = run_playbook(PLAYBOOK, *agent_config_args(lab, workdir, config, login), env=lab_env(lab), timeout=600)
    assert rc == 0, output[-6000:]
    said = " ".join(output.split())
    assert "extra-worker-0: its BMC answers: system /redfish/v1/Systems/" in said  # preflight's read-only question
    assert lab.info["redfish"]["password"] not in output
    hosts = {h["name"]: h for h in lab.control("GET", "/hosts")}
    assert all(hosts[name]["booted_by"] == "redfish" for name in ("extra-worker-0", "extra-worker-1")), hosts
    nodes = {o["metadata"]["name"]: o for o in lab.dump()["objects"] if o["kind"] == "Node"}
    for name in ("extra-worker-0", "extra-worker-1"):
        ready = [c for c in nodes[name]["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True", name


def test_a_wrong_bmc_password_in_the_file_is_refused_before_any_write(lab_factory, tmp_path):
    lab = lab_factory("--hosts", "2", "--redfish", "--agent-port", "0", "--kubelet-port", "0")
    config, login = agent_config_with_bmcs(lab, tmp_path, wrong_password_for="extra-worker-1")
    lab.reset_log()
    rc, output = run_playbook(PLAYBOOK, *agent_config_args(lab, tmp_path / "work", config, login), env=lab_env(lab))
    assert rc != 0, output[-6000:]
    said = " ".join(output.split())
    assert 'host extra-worker-1: field "bmc.password": the BMC at 127.0.0.1:' in said, said[-4000:]
    assert "check bmc.username and bmc.password against the BMC's accounts in %s" % config in said
    assert "wrong-password" not in output and lab.info["redfish"]["password"] not in output
    assert lab.writes() == [], lab.writes()  # only reads and access reviews reached the API server
    assert not any(h.get("booted_by") for h in lab.control("GET", "/hosts"))


def inventory_with(lab, path, group=None, **hosts):
    """The lab's inventory, each host's variables updated from ``hosts`` (None removes one), the group's from
    ``group``; written to ``path``."""
    document = yaml.safe_load(Path(lab.inventory).read_text())
    workers = document["all"]["children"]["new_workers"]
    for name, changes in hosts.items():
        workers["hosts"][name].update(changes)
        workers["hosts"][name] = {key: value for key, value in workers["hosts"][name].items() if value is not None}
    workers["vars"].update(group or {})
    path.write_text(yaml.safe_dump(document))
    return str(path)


def args_with(lab, workdir, inventory, *extra):
    args = redfish_args(lab, workdir)
    args[args.index(lab.inventory)] = inventory
    return [*args, *extra]


def emulator_without_cd(lab, tmp_path):
    """A second sushy-emulator with the lab's systems, login and certificate whose BMCs offer no CD or DVD virtual
    media (a floppy/USB stick only); returns (process, its base URL)."""
    config = (lab.state / "redfish" / "emulator.conf").read_text()
    port = free_port()
    config = config.replace(
        "LISTEN_PORT = %s" % lab.info["redfish"]["url"].rsplit(":", 1)[1], "LISTEN_PORT = %d" % port
    )
    config = config.replace(repr(str(lab.state / "redfish" / "state")), repr(str(tmp_path / "state")))
    floppy = {"Floppy": {"Name": "Virtual Removable Media", "MediaTypes": ["Floppy", "USBStick"]}}
    path = tmp_path / "emulator.conf"
    path.write_text(config + "SUSHY_EMULATOR_VMEDIA_DEVICES = %r\n" % floppy)
    with open(tmp_path / "emulator.log", "wb") as log:
        process = subprocess.Popen([str(VENV_BIN / "sushy-emulator"), "--config", str(path)], stdout=log, stderr=log)
    url = "https://127.0.0.1:%d" % port
    wait_for(lambda: _answers(url), timeout=30)
    return process, url


def _answers(url):
    try:
        return bool(urllib.request.urlopen(url + "/redfish/v1", context=ssl._create_unverified_context(), timeout=2))
    except OSError:
        return False


def test_bmc_settings_from_group_vars_reach_preflight_and_a_wrong_one_is_refused_before_any_write(
    lab_factory, tmp_path
):
    lab = lab_factory("--hosts", "2", "--redfish", "--agent-port", "0", "--kubelet-port", "0")
    password = lab.info["redfish"]["password"]
    unset = {"bmc_username": None, "bmc_password": None}
    hosts = dict.fromkeys(("extra-worker-0", "extra-worker-1"), unset)
    group = {"bmc_username": "admin", "bmc_password": "wrong-password"}
    lab.reset_log()
    wrong = inventory_with(lab, tmp_path / "wrong.yml", group, **hosts)
    rc, output = run_playbook(PLAYBOOK, *args_with(lab, tmp_path / "work", wrong), env=lab_env(lab))
    said = " ".join(output.split())
    assert rc != 0, said[-4000:]
    for name in ("extra-worker-0", "extra-worker-1"):  # every refusal at once
        assert 'host %s: field "bmc_password": the BMC at 127.0.0.1:' % name in said, said[-4000:]
    assert "wrong-password" not in output and password not in output
    assert lab.writes() == [], lab.writes()
    # The right login in the group's variables: the BMCs answer preflight's questions, and check mode plans the boot.
    right = inventory_with(lab, tmp_path / "right.yml", dict(group, bmc_password=password), **hosts)
    rc, output = run_playbook(PLAYBOOK, *args_with(lab, tmp_path / "work", right, "--check"), env=lab_env(lab))
    said = " ".join(output.split())
    assert rc == 0, said[-4000:]
    for name in ("extra-worker-0", "extra-worker-1"):
        assert "%s: its BMC answers: system /redfish/v1/Systems/" % name in said
        assert "Check mode: %s would be booted through its BMC" % name in said
    assert password not in output and lab.writes() == []


def test_an_unreachable_bmc_a_missing_system_and_a_bmc_without_a_cd_are_refused_before_any_write(lab_factory, tmp_path):
    lab = lab_factory("--hosts", "3", "--redfish", "--agent-port", "0", "--kubelet-port", "0")
    process, no_cd = emulator_without_cd(lab, tmp_path)
    try:
        addresses = {
            "extra-worker-0": "https://127.0.0.1:%d/redfish/v1" % free_port(),  # nothing listens there
            "extra-worker-1": "%s/redfish/v1/Systems/%s" % (no_cd, lab.info["redfish"]["systems"]["extra-worker-1"]),
            "extra-worker-2": "%s/redfish/v1/Systems/no-such-system" % lab.info["redfish"]["url"],
        }
        changes = {name: {"bmc_address": "redfish-virtualmedia+" + url} for name, url in addresses.items()}
        inventory = inventory_with(lab, tmp_path / "inventory.yml", **changes)
        lab.reset_log()
        rc, output = run_playbook(PLAYBOOK, *args_with(lab, tmp_path / "work", inventory), env=lab_env(lab))
    finally:
        process.terminate()
        process.wait(timeout=30)
    said = " ".join(output.split())
    assert rc != 0, said[-4000:]
    assert 'host extra-worker-0: field "bmc_address": the BMC at 127.0.0.1:' in said, said[-4000:]
    assert "check that this controller reaches the BMC over HTTPS" in said
    no_cd_words = 'host extra-worker-1: field "bmc_address": the BMC at %s offers no CD/DVD virtual media'
    assert no_cd_words % no_cd.split("//")[1] in said
    no_system = (
        'host extra-worker-2: field "bmc_address": the BMC at %s has no system /redfish/v1/Systems/no-such-system'
    )
    assert no_system % lab.info["redfish"]["url"].split("//")[1] in said
    assert lab.writes() == [], lab.writes()
    assert lab.info["redfish"]["password"] not in output


def test_the_vault_layout_boots_through_redfish(lab_factory, tmp_path):
    """Ansible's documented vault layout: group_vars/new_workers/vars.yml says bmc_password: "{{ vault_bmc_password }}",
    an encrypted vault.yml beside it holds vault_bmc_password (and a variable that resembles a host key but only lives
    in the encrypted file); the run is given --vault-password-file. None of them is taken for a misspelt host key."""
    lab = lab_factory("--hosts", "2", "--redfish", "--agent-port", "0", "--kubelet-port", "0", "--install-seconds", "6")
    password = lab.info["redfish"]["password"]
    folder = tmp_path / "inventory"
    (folder / "group_vars" / "new_workers").mkdir(parents=True)
    hosts = {name: {"bmc_password": None} for name in ("extra-worker-0", "extra-worker-1")}
    inventory = inventory_with(lab, folder / "hosts.yml", **hosts)
    (folder / "group_vars" / "new_workers" / "vars.yml").write_text('bmc_password: "{{ vault_bmc_password }}"\n')
    vault = folder / "group_vars" / "new_workers" / "vault.yml"
    vault.write_text(yaml.safe_dump({"vault_bmc_password": password, "bmc_password_rack2": "spare-Password-7"}))
    secret = tmp_path / "vault-password"
    secret.write_text("the-vault-password\n")
    encrypt = [str(VENV_BIN / "ansible-vault"), "encrypt", "--vault-password-file", str(secret), str(vault)]
    subprocess.run(encrypt, check=True, capture_output=True, env=ansible_env(), timeout=60)
    assert vault.read_text().startswith("$ANSIBLE_VAULT;")
    args = args_with(lab, tmp_path / "work", inventory, "--vault-password-file", str(secret))
    rc, output = run_playbook(PLAYBOOK, *args, env=lab_env(lab), timeout=600)
    assert rc == 0, output[-6000:]
    said = " ".join(output.split())
    assert '"vault_bmc_password"' in said and '"bmc_password_rack2"' in said  # left alone, named in the plan
    assert password not in output and "spare-Password-7" not in output
    hosts = {h["name"]: h for h in lab.control("GET", "/hosts")}
    assert all(hosts[name]["booted_by"] == "redfish" for name in ("extra-worker-0", "extra-worker-1")), hosts
