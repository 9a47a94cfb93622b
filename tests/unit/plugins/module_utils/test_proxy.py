# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one proxy policy (net.proxy_for) and the agent and kubelet connections that follow it."""

from __future__ import annotations

import http.server
import json
import threading

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.net import proxy_for
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.agent import (
    AgentClient,
    AgentRequestError,
    AuthChoice,
    kubelet_state,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.token import AgentToken

PROXY = "http://proxy.example:3128"


@pytest.fixture
def proxied(monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)

    def set_no_proxy(value, proxy=PROXY):
        monkeypatch.setenv("HTTP_PROXY", proxy)
        monkeypatch.setenv("HTTPS_PROXY", proxy)
        monkeypatch.setenv("NO_PROXY", value)

    return set_no_proxy


@pytest.mark.parametrize(
    "no_proxy, url, expected",
    [
        ("127.0.0.0/8", "https://127.0.111.5:8000/redfish/v1", None),  # a CIDR, as oc and curl read it
        ("127.0.0.0/8", "http://10.1.1.1:8090/api", PROXY),
        ("fd00::/8", "http://[fd00::21]:8090/api", None),  # an IPv6 CIDR
        ("fd00::/8", "http://[fe80::1]:8090/api", PROXY),
        (".example.com", "https://bmc.example.com/", None),  # a domain suffix
        ("example.com", "https://bmc.example.com/", None),
        ("example.com", "https://example.org/", PROXY),
        ("10.0.0.5:8090", "http://10.0.0.5:8090/api", None),  # address:port
        ("10.0.0.5:8090", "http://10.0.0.5:9000/api", PROXY),
        ("*", "https://anything.example.org/", None),
        ("", "https://api.lab:6443", PROXY),
    ],
)
def test_no_proxy_as_oc_and_curl_read_it(proxied, no_proxy, url, expected):
    proxied(no_proxy)
    assert proxy_for(url) == expected


def test_no_proxy_variables_means_direct(proxied):
    assert proxy_for("https://api.lab:6443") is None


class Recorder(http.server.BaseHTTPRequestHandler):
    """A forward proxy that answers every request itself and records its request line."""

    seen: list = []

    def do_GET(self):
        Recorder.seen.append((self.requestline, self.headers.get("Watcher-Authorization")))
        body = json.dumps([]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def forward_proxy():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Recorder.seen = []
    yield "http://127.0.0.1:%d" % server.server_address[1]
    server.shutdown()
    server.server_close()


def agent(address):
    token = AgentToken("header.eyJhdXRoX3NjaGVtZSI6IndhdGNoZXJBdXRoIn0.sig")
    return AgentClient("worker-0", address, None, (8090, 10250), AuthChoice(token), 2)


def test_an_agent_request_goes_through_the_proxy_with_the_whole_url(proxied, forward_proxy):
    proxied("127.0.0.0/8", forward_proxy)  # the proxy itself is on loopback: only 192.0.2.x goes through it
    assert agent("192.0.2.10").get("/clusters") == []
    assert Recorder.seen == [
        (
            "GET http://192.0.2.10:8090/api/assisted-install/v2/clusters HTTP/1.1",
            "header.eyJhdXRoX3NjaGVtZSI6IndhdGNoZXJBdXRoIn0.sig",
        )
    ]


def test_a_dead_proxy_is_named_with_the_setting_that_goes_around_it(proxied):
    proxied("", "http://127.0.0.1:9")
    with pytest.raises(AgentRequestError, match=r"through the proxy http://127.0.0.1:9: set NO_PROXY to reach it"):
        agent("127.0.0.2").get("/clusters")
    assert kubelet_state("127.0.0.2", 10250, 1) is None  # CONNECT to the dead proxy fails: nothing answered


def test_the_plan_says_which_connection_goes_through_the_proxy(proxied):
    from ansible_collections.openshift_agent.day2.plugins.module_utils._check.workers import connection_lines

    hosts = [{"name": "w0", "address": "10.0.0.5", "bmc": {"bmc_base_url": "https://bmc.example.com"}}]
    cluster = {"api_url": "https://api.lab.example.com:6443"}
    assert connection_lines(cluster, hosts, "cluster") == [
        "Installs followed from inside the cluster (node-joiner monitor-add-nodes): only the API server is reached "
        "from here (day2_follow_from cluster)"
    ]
    proxied(".example.com")
    lines = connection_lines(cluster, hosts, "auto")
    assert lines[1] == (
        "Proxies (HTTPS_PROXY, HTTP_PROXY, NO_PROXY): directly: the API server, the BMC of w0; through "
        f"{PROXY}: the agent of w0. NO_PROXY decides (CIDRs, domains allowed)"
    )
