"""The Redfish boot of a simulated host through sushy-emulator: BMC credentials in the inventory, virtual media
downloaded from a loopback URL, power on and off through ComputerSystem.Reset."""

from __future__ import annotations

import functools
import http.server
import json
import threading

import requests
from conftest import running_lab
from lab.waiting import wait_for


def serve(directory):
    """A plain HTTP server on loopback for ``directory`` (where a BMC downloads virtual media from)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_redfish_boot(tmp_path):
    state = str(tmp_path / "redfish-lab")
    start = ("--hosts", "1", "--redfish", "--agent-port", "0", "--kubelet-port", "0", "--install-seconds", "30")
    with running_lab(state, *start) as redfish_lab:
        info = redfish_lab.info
        bmc = info["hosts"][0]
        system = info["redfish"]["systems"]["extra-worker-0"]
        assert bmc["bmc_address"] == f"redfish-virtualmedia+{info['redfish']['url']}/redfish/v1/Systems/{system}"
        assert bmc["bmc_username"] == info["redfish"]["username"] and bmc["bmc_password"]
        with open(f"{state}/inventory.yml", encoding="utf-8") as handle:
            assert bmc["bmc_password"] in handle.read()
        base = bmc["bmc_address"].split("+", 1)[1]
        assert base.startswith("https://") and bmc["bmc_verify_certs"] is False
        ca = info["redfish"]["ca_path"]  # the lab CA verifies the emulator
        auth = (bmc["bmc_username"], bmc["bmc_password"])
        assert requests.get(base, timeout=5, verify=ca).status_code == 401
        described = requests.get(base, auth=auth, timeout=5, verify=ca).json()
        assert described["PowerState"] == "Off"
        nics = requests.get(base + "/EthernetInterfaces", auth=auth, timeout=5, verify=ca).json()["Members"]
        assert "52:54:00:6f:00:14" in json.dumps(nics).lower()
        # The BMC downloads the image from its URL, and so does the lab: serve it on loopback.
        (tmp_path / "www").mkdir()
        iso = redfish_lab.build_iso(tmp_path / "www" / "node.iso")
        server = serve(tmp_path / "www")
        try:
            url = f"http://127.0.0.1:{server.server_port}/node.iso"
            inserted = requests.post(
                base + "/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia",
                auth=auth,
                json={"Image": url, "Inserted": True},
                timeout=30,
                verify=ca,
            )
            assert inserted.status_code == 204, inserted.text
            powered = requests.post(
                base + "/Actions/ComputerSystem.Reset", auth=auth, json={"ResetType": "On"}, timeout=5, verify=ca
            )
            assert powered.status_code == 204, powered.text
            # The fake driver applies power changes 1-11 s later; the lab polls every 0.5 s.
            booted = wait_for(
                lambda: (s := redfish_lab.host_state("extra-worker-0")) and s["phase"] == "agent" and s, timeout=20
            )
        finally:
            server.shutdown()
        assert booted["booted_by"] == "redfish" and booted["iso"] == f"{state}/redfish/extra-worker-0.iso"
        assert booted["booted_from"] == "iso"
        with open(iso, "rb") as original, open(booted["iso"], "rb") as downloaded:
            assert original.read() == downloaded.read()
        requests.post(
            base + "/Actions/ComputerSystem.Reset", auth=auth, json={"ResetType": "ForceOff"}, timeout=5, verify=ca
        )
        wait_for(lambda: redfish_lab.host_state("extra-worker-0")["phase"] == "off", timeout=20)
