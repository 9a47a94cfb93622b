"""Serving certificates on real NICs: the whole playbook, playbooks/add_workers.yml, on the lab's ``dualstack``
variant (docs/csr-approval.md, "IP SANs on real NICs").

extra-worker-0 is given only ``ip`` (static IPv4 in raw nmstate, IPv6 left to router advertisements): its kubelet
reports an IPv6 address too, its Node's status.addresses and its serving CSR carry both families, and its serving
CSR is approved. extra-worker-1's kubelet also reports an address outside the machine networks (the lab fault
``kubelet_extra_address``): its serving CSR stays pending, and the run names the CSR, the SAN and why. What happened
is read from the lab's own records (approvals log, CSRs, Nodes).
"""

import base64
import ipaddress
from pathlib import Path

import yaml
from conftest import REPO, lab_env, run_playbook
from cryptography import x509
from test_add_workers import console_boots_when_iso_is_ready, playbook_args

PLAYBOOK = REPO / "playbooks" / "add_workers.yml"
MACHINE_NETWORK_V6 = ipaddress.ip_network("fd2e:6f44:5dd8:c956::/64")  # tests/lab/lab/seeds/dualstack
OUTSIDE = "198.51.100.21"  # TEST-NET-2: in no machine network of the lab (never connected to)
SERVING_SIGNER = "kubernetes.io/kubelet-serving"


def only_ip_with_ipv6_autoconf(host):
    """The host's static IPv4 as raw nmstate, IPv6 by router advertisements; ``ip`` stays, ``ipv6`` is not given."""
    mac = host["mac_address"]
    interface = {
        "name": "eth0",
        "type": "ethernet",
        "state": "up",
        "mac-address": mac,
        "ipv4": {"enabled": True, "dhcp": False, "address": [{"ip": host["ip"], "prefix-length": 24}]},
        "ipv6": {"enabled": True, "dhcp": True, "autoconf": True},
    }
    routes = [{"destination": "0.0.0.0/0", "next-hop-address": host["gateway"], "next-hop-interface": "eth0"}]
    return {
        "ip": host["ip"],
        "interfaces": [{"name": "eth0", "mac_address": mac}],
        "network_config": {
            "interfaces": [interface],
            "dns-resolver": {"config": {"server": list(host["dns_servers"])}},
            "routes": {"config": [dict(route, **{"table-id": 254}) for route in routes]},
        },
    }


def serving_sans(csr):
    request = x509.load_pem_x509_csr(base64.b64decode(csr["spec"]["request"]))
    sans = request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return sans.get_values_for_type(x509.DNSName), [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)]


def test_a_host_given_only_ip_gets_both_families_and_an_address_outside_the_machine_networks_is_named(
    lab_factory, tmp_path
):
    lab = lab_factory(
        "--variant", "dualstack", "--hosts", "2", "--install-seconds", "6", "--agent-port", "0", "--kubelet-port", "0"
    )
    inventory = yaml.safe_load(Path(lab.inventory).read_text())
    hosts = inventory["all"]["children"]["new_workers"]["hosts"]
    first = hosts["extra-worker-0"]
    hosts["extra-worker-0"] = only_ip_with_ipv6_autoconf(first)
    written = tmp_path / "inventory.yml"
    written.write_text(yaml.safe_dump(inventory))
    lab.control("POST", "/faults", {"kubelet_extra_address": f"extra-worker-1:{OUTSIDE}"})
    workdir = tmp_path / "work"
    console = console_boots_when_iso_is_ready(lab, workdir, ["extra-worker-0", "extra-worker-1"])
    args = playbook_args(lab, workdir, "-e", "day2_max_failed_hosts=1", "-e", "day2_join_timeout=60")
    args[1] = str(written)
    rc, output = run_playbook(PLAYBOOK, *args, env=lab_env(lab))
    console.join(timeout=5)
    assert rc == 0, output[-6000:]

    dump = lab.dump()
    nodes = {o["metadata"]["name"]: o for o in dump["objects"] if o["kind"] == "Node"}
    csrs = {o["metadata"]["name"]: o for o in dump["objects"] if o["kind"] == "CertificateSigningRequest"}
    approved = {a["csr"] for a in dump["approvals"]}
    serving = {
        host: [
            name
            for name, csr in csrs.items()
            if csr["spec"]["signerName"] == SERVING_SIGNER and csr["spec"]["username"] == f"system:node:{host}"
        ]
        for host in ("extra-worker-0", "extra-worker-1")
    }

    # extra-worker-0: its Node and its serving CSR carry an IPv6 address of the machine network it was not given
    reported = [a["address"] for a in nodes["extra-worker-0"]["status"]["addresses"] if a["type"] == "InternalIP"]
    assert reported[0] == first["ip"] and len(reported) == 2
    assert ipaddress.ip_address(reported[1]) in MACHINE_NETWORK_V6
    dns, ips = serving_sans(csrs[serving["extra-worker-0"][0]])
    assert dns == ["extra-worker-0"] and sorted(ips) == sorted(reported)
    assert [name for name in serving["extra-worker-0"] if name in approved] == serving["extra-worker-0"][:1]
    ready = [c["status"] for c in nodes["extra-worker-0"]["status"]["conditions"] if c["type"] == "Ready"]
    assert ready == ["True"]

    # extra-worker-1: no serving CSR approved; the run names the CSR, the SAN and why
    assert serving["extra-worker-1"] and not approved & set(serving["extra-worker-1"])
    assert OUTSIDE in serving_sans(csrs[serving["extra-worker-1"][0]])[1]
    why = (
        f"san-outside-machine-networks: SAN {OUTSIDE}, reported by its Node, is outside the cluster's machine networks"
    )
    assert f"{serving['extra-worker-1'][0]}: {why}" in output, output[-6000:]
    failed = [line for line in output.splitlines() if line.startswith("summary extra-worker-1: failed")]
    assert failed and "not Ready within 60 s after it rebooted" in failed[0] and why in failed[0], failed
