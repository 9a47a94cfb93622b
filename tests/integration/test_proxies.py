"""Environment proxies, as an admin's shell or an AWX execution environment sets them: every connection of the run
(the API server, the BMCs, the agents, the kubelets) follows HTTPS_PROXY/HTTP_PROXY/NO_PROXY as oc and curl read
them, a CIDR in NO_PROXY included, and a connection that would go through a dead proxy is found before any write."""

import socket

from conftest import lab_env, run_playbook
from test_add_workers import PLAYBOOK, assert_ready_nodes
from test_boot_redfish import redfish_args


def dead_proxy():
    """The URL of a proxy nothing listens on (a port taken and closed again)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return "http://127.0.0.1:%d" % probe.getsockname()[1]


def proxy_env(lab, no_proxy):
    proxy = dead_proxy()
    names = ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy")
    return dict(lab_env(lab), NO_PROXY=no_proxy, no_proxy=no_proxy, **dict.fromkeys(names, proxy)), proxy


def test_a_dead_proxy_with_a_cidr_no_proxy_reaches_everything_directly(lab_factory, tmp_path):
    lab = lab_factory("--hosts", "2", "--redfish", "--agent-port", "0", "--kubelet-port", "0", "--install-seconds", "6")
    env, _proxy = proxy_env(lab, "127.0.0.0/8")  # the form oc, curl and Go accept; Python's urllib does not
    rc, output = run_playbook(PLAYBOOK, *redfish_args(lab, tmp_path / "work"), env=env)
    assert rc == 0, output[-6000:]
    assert_ready_nodes(lab, [h["name"] for h in lab.info["hosts"]])
    flat = " ".join(output.split())  # the plan says where each connection goes, before anything is written
    assert "Proxies (HTTPS_PROXY, HTTP_PROXY, NO_PROXY): directly: the API server, the BMC of extra-worker-0" in flat


def test_a_bmc_behind_a_dead_proxy_is_found_before_any_write(lab_factory, tmp_path):
    lab = lab_factory("--hosts", "1", "--redfish", "--agent-port", "0", "--kubelet-port", "0")
    api_port = lab.info["api_url"].rsplit(":", 1)[1].rstrip("/")
    # The API server and the hosts go direct; the BMCs (sushy-emulator on 127.0.0.1, another port) through the proxy.
    env, proxy = proxy_env(lab, f"127.0.0.1:{api_port},127.0.111.0/24")
    lab.reset_log()
    rc, output = run_playbook(PLAYBOOK, *redfish_args(lab, tmp_path / "work"), env=env)
    assert rc != 0
    flat = " ".join(output.split())
    assert 'field "bmc_address"' in flat and f"through the proxy {proxy}" in flat and "NO_PROXY" in flat, flat[-3000:]
    assert lab.writes() == []
