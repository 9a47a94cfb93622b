"""The controller's ISO server (_boot/serve.py, _boot/server.py): one secret path, GET/HEAD, byte ranges, HTTPS,
stopped by its pidfile, and gone on its own when the process it watches dies."""

from __future__ import annotations

import http.client
import os
import signal
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trustme

from ansible_collections.openshift_agent.day2.plugins.module_utils._boot import server
from ansible_collections.openshift_agent.day2.plugins.module_utils._boot.serve import parse_range, process_alive

DATA = bytes(range(256)) * 4096  # 1 MiB


@pytest.fixture
def iso(tmp_path):
    path = tmp_path / "node.x86_64.iso"
    path.write_bytes(DATA)
    return path


def _request(url, method="GET", headers=None, context=None):
    parts = http.client.urlsplit(url)
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    kwargs = {"context": context} if context else {}
    connection = cls(parts.hostname, parts.port, timeout=10, **kwargs)
    connection.request(method, parts.path, headers=headers or {})
    response = connection.getresponse()
    body = response.read()
    connection.close()
    return response, body


def _watched():
    """A process standing in for ansible-playbook."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])


def test_parse_range():
    assert parse_range(None, 10) is None
    assert parse_range("bytes=0-3", 10) == (0, 3)
    assert parse_range("bytes=5-", 10) == (5, 9)
    assert parse_range("bytes=-4", 10) == (6, 9)
    assert parse_range("bytes=8-100", 10) == (8, 9)
    assert parse_range("bytes=0-1,4-5", 10) is None
    assert parse_range("items=0-1", 10) is None
    for bad in ("bytes=10-", "bytes=5-2", "bytes=-0"):
        with pytest.raises(ValueError):
            parse_range(bad, 10)


def test_parse_address():
    assert server.parse_address("192.168.111.1:8080") == ("192.168.111.1", 8080)
    assert server.parse_address("[fd00::1]:8443") == ("fd00::1", 8443)
    assert server.parse_address("fd00::1") == ("fd00::1", 0)
    assert server.parse_address(":9000") == ("", 9000)
    assert server.parse_address("") == ("", 0)
    with pytest.raises(ValueError):
        server.parse_address("host:http")


def test_serves_one_secret_path_with_ranges_and_stops(tmp_path, iso):
    watched = _watched()
    try:
        started = server.start(str(iso), str(tmp_path), "127.0.0.1:0", [], watched.pid, 600)
        url = started["url"]
        token = url.split("/")[3]
        assert len(token) >= 32 and token not in started["display_url"]
        assert (tmp_path / "iso-serve.token").stat().st_mode & 0o077 == 0
        response, body = _request(url)
        assert response.status == 200 and body == DATA and response.getheader("Accept-Ranges") == "bytes"
        response, body = _request(url, "HEAD")
        assert response.status == 200 and body == b"" and int(response.getheader("Content-Length")) == len(DATA)
        response, body = _request(url, headers={"Range": "bytes=100-199"})
        assert response.status == 206 and body == DATA[100:200]
        assert response.getheader("Content-Range") == "bytes 100-199/%d" % len(DATA)
        response, body = _request(url, headers={"Range": "bytes=-10"})
        assert response.status == 206 and body == DATA[-10:]
        response, _body = _request(url, headers={"Range": "bytes=%d-" % len(DATA)})
        assert response.status == 416 and response.getheader("Content-Range") == "bytes */%d" % len(DATA)
        response, body = _request(url, headers={"Range": "bytes=0-9", "If-Range": '"stale"'})
        assert response.status == 200 and body == DATA
        for method in ("POST", "PUT", "DELETE", "OPTIONS"):
            response, _body = _request(url, method)
            assert response.status == 405 and response.getheader("Allow") == "GET, HEAD"
        base = url.rsplit("/", 2)[0]
        for path in ("/", "/node.x86_64.iso", "/%s/" % token, "/guess/node.x86_64.iso"):
            assert _request(base + path)[0].status == 404
        log = (tmp_path / "iso-serve.log").read_text()
        assert "range=bytes=100-199 status=206" in log and token not in log
        stopped = server.stop(started["pidfile"])
        assert stopped == {"stopped": True, "pid": started["pid"]}
        assert not process_alive(started["pid"], None)
        assert not (tmp_path / "iso-serve.pid").exists()
        assert server.stop(started["pidfile"]) == {"stopped": False, "pid": None}
    finally:
        watched.kill()
        watched.wait()


def test_a_new_start_gets_a_new_path_and_stops_the_old_server(tmp_path, iso):
    watched = _watched()
    try:
        first = server.start(str(iso), str(tmp_path), "127.0.0.1", [], watched.pid, 600)
        second = server.start(str(iso), str(tmp_path), "127.0.0.1", [], watched.pid, 600)
        assert first["url"].split("/")[3] != second["url"].split("/")[3]
        assert not process_alive(first["pid"], None) and process_alive(second["pid"], None)
        server.stop(second["pidfile"])
    finally:
        watched.kill()
        watched.wait()


def test_https(tmp_path, iso):
    authority = trustme.CA()
    issued = authority.issue_cert("127.0.0.1")
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    issued.cert_chain_pems[0].write_to_path(str(cert))
    issued.private_key_pem.write_to_path(str(key))
    watched = _watched()
    try:
        started = server.start(str(iso), str(tmp_path), "127.0.0.1", [], watched.pid, 600, str(cert), str(key))
        assert started["url"].startswith("https://127.0.0.1:")
        context = ssl.create_default_context()
        authority.configure_trust(context)
        response, body = _request(started["url"], headers={"Range": "bytes=0-15"}, context=context)
        assert response.status == 206 and body == DATA[:16]
        server.stop(started["pidfile"])
    finally:
        watched.kill()
        watched.wait()


def test_exits_when_the_watched_process_dies(tmp_path, iso):
    watched = _watched()
    started = server.start(str(iso), str(tmp_path), "127.0.0.1", [], watched.pid, 600)
    assert process_alive(started["pid"], None)
    os.kill(watched.pid, signal.SIGKILL)  # a zombie until reaped: that counts as gone too
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and process_alive(started["pid"], None):
        time.sleep(0.1)
    watched.wait()
    assert not process_alive(started["pid"], None)
    assert "exit: the run (pid %d) is gone" % watched.pid in (tmp_path / "iso-serve.log").read_text()
    assert not (tmp_path / "iso-serve.pid").exists()


def test_refusals_name_the_fix(tmp_path, iso):
    with pytest.raises(server.ServeError, match="is not a file; build the ISO first"):
        server.start(str(tmp_path / "missing.iso"), str(tmp_path), "127.0.0.1", [], os.getpid(), 600)
    with pytest.raises(server.ServeError, match="tls_cert and tls_key go together"):
        server.start(str(iso), str(tmp_path), "127.0.0.1", [], os.getpid(), 600, cert="/x")
    with pytest.raises(server.ServeError, match="write host:port"):
        server.start(str(iso), str(tmp_path), "127.0.0.1:port", [], os.getpid(), 600)
    watched = _watched()
    try:
        first = server.start(str(iso), str(tmp_path), "127.0.0.1", [], watched.pid, 600)
        other = tmp_path / "other"
        other.mkdir()
        with pytest.raises(server.ServeError, match="choose a free address and port in day2_serve_address"):
            server.start(str(iso), str(other), first["address"], [], watched.pid, 600)
        server.stop(first["pidfile"])
    finally:
        watched.kill()
        watched.wait()


def test_listen_address_routes_to_the_bmcs():
    assert server.listen_address("192.168.111.1", []) == ("192.168.111.1", 0)
    assert server.listen_address("0.0.0.0:8080", ["https://127.0.0.1:8000/redfish/v1"]) == ("127.0.0.1", 8080)
    with pytest.raises(server.ServeError, match="set day2_serve_address"):
        server.listen_address("", [])


def _listening(port):
    """The local addresses of the sockets listening on ``port`` (Linux /proc/net/tcp, hex little-endian)."""
    found = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, hex_port = local.split(":")
        if state == "0A" and int(hex_port, 16) == port:
            found.append(".".join(str(int(address[i : i + 2], 16)) for i in (6, 4, 2, 0)))
    return found


@pytest.mark.parametrize("address", ["", "0.0.0.0:0"])
def test_the_server_listens_on_one_address_never_on_every_one(tmp_path, iso, address):
    """Unset, or given as every address, the server binds the controller's address towards the BMCs alone (the ISO
    holds the pull secret)."""
    watched = _watched()
    try:
        started = server.start(
            str(iso), str(tmp_path), address, ["https://127.0.0.5:8000/redfish/v1"], watched.pid, 600
        )
        port = int(started["address"].rsplit(":", 1)[1])
        assert _listening(port) == ["127.0.0.1"]
        assert started["address"] == "127.0.0.1:%d" % port
        server.stop(started["pidfile"])
    finally:
        watched.kill()
        watched.wait()
