"""Redfish boot of the simulated hosts: sushy-tools' ``sushy-emulator`` (fake driver) as every host's BMC.

With ``labctl start --redfish`` the lab starts the emulator on 127.0.0.1 over HTTPS (a certificate of a
trustme CA made for the lab: community.general's redfish modules talk HTTPS only) with HTTP basic auth (a
bcrypt htpasswd file, the only digest sushy-tools accepts) and one fake system per inventory host carrying
the host's MAC. It writes ``bmc_address`` (``redfish-virtualmedia+https://127.0.0.1:PORT/redfish/v1/Systems/ID``),
``bmc_username``, ``bmc_password`` and ``bmc_verify_certs: false`` (a self-signed BMC, as most are) into the
inventory host vars and a ``redfish`` section into lab.json, with ``ca_path``: the CA file that verifies the
emulator (``day2_bmc_ca_path`` with ``bmc_verify_certs=true``).

The lab then polls every system through the emulator's own Redfish API, as a BMC's firmware would act on
it: once the virtual CD holds an image (``Inserted`` and ``Image``) and the power state is ``On``, it
downloads the image from its URL (127.0.0.1 only; HEAD, then range requests as BMCs read virtual media) and
boots the host from it. Powering off stops the host; inserting another image while on boots that one at the
next power on. Every eject of a booted host's CD is recorded with the host's status, stage and progress at
that moment (``/state`` ``redfish.ejects``), so a test can tell whether it came after the disk was written.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import shutil
import ssl
import subprocess
import sys
import time
import urllib.parse
import uuid

import aiohttp
import bcrypt
import trustme

from .hosts import free_port

LOG = logging.getLogger("lab.redfish")
USERNAME = "admin"
POLL_SECONDS = 0.5
READY_TIMEOUT = 20.0
LOOPBACK = ("127.", "localhost", "[::1]")
RANGE_CHUNK = 4 << 20  # bytes per range request of the image download


def system_id(host) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_OID, "lab-bmc-" + host["mac_address"].lower()))


def emulator_config(directory: str, hosts, port: int, auth_file: str, tls: tuple[str, str]) -> str:
    """The sushy-emulator config file (Python, read with Flask's from_pyfile)."""
    systems = [
        {
            "uuid": system_id(h),
            "name": h["name"],
            "power_state": "Off",
            "external_notifier": False,
            "nics": [{"mac": h["mac_address"].lower(), "ip": h["ip"]}],
        }
        for h in hosts
    ]
    settings = {
        "SUSHY_EMULATOR_LISTEN_IP": "127.0.0.1",
        "SUSHY_EMULATOR_LISTEN_PORT": port,
        "SUSHY_EMULATOR_AUTH_FILE": auth_file,
        "SUSHY_EMULATOR_FAKE_DRIVER": True,
        "SUSHY_EMULATOR_FAKE_SYSTEMS": systems,
        # Its own state directory: the default (/tmp/sushy-emulator) would leak systems between labs.
        "SUSHY_EMULATOR_STATE_DIR": os.path.join(directory, "state"),
        "SUSHY_EMULATOR_VMEDIA_VERIFY_SSL": False,
        "SUSHY_EMULATOR_SSL_CERT": tls[0],
        "SUSHY_EMULATOR_SSL_KEY": tls[1],
    }
    path = os.path.join(directory, "emulator.conf")
    with open(path, "w", encoding="utf-8") as handle:
        for key, value in settings.items():
            handle.write(f"{key} = {value!r}\n")
    return path


class RedfishBoot:
    """Runs the emulator and boots hosts from what their BMCs say."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.directory = os.path.join(ctx.state_dir, "redfish")
        self.port = free_port()
        self.password = base64.urlsafe_b64encode(os.urandom(12)).decode()
        self.url = f"https://127.0.0.1:{self.port}"
        self.ca_path = os.path.join(self.directory, "ca.pem")
        self.process = None
        self.booted = {}  # host name -> image URL it booted
        self.errors = {}  # host name -> last boot problem
        self.ejects = []  # every eject of a booted host's CD, with where its install stood
        self.ranges = {}  # host name -> range requests its BMC made for the image
        self._inserted = {}  # host name -> whether its CD held an image at the last poll
        self._task = None

    def start(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
        os.makedirs(os.path.join(self.directory, "tmp"), mode=0o700)
        auth_file = os.path.join(self.directory, "htpasswd")
        # Cost 4: the emulator checks the hash on every request, and the lab polls often.
        digest = bcrypt.hashpw(self.password.encode(), bcrypt.gensalt(rounds=4)).decode()
        with open(auth_file, "w", encoding="utf-8") as handle:
            handle.write(f"{USERNAME}:{digest}\n")
        config = emulator_config(self.directory, self.ctx.hosts, self.port, auth_file, self._certificate())
        # TMPDIR: the emulator downloads inserted images there; keep them inside the state directory.
        env = dict(os.environ, TMPDIR=os.path.join(self.directory, "tmp"))
        emulator = os.path.join(os.path.dirname(sys.executable), "sushy-emulator")
        with open(os.path.join(self.directory, "emulator.log"), "wb") as log:
            self.process = subprocess.Popen(
                [emulator, "--config", config], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env
            )
        self.ctx.add_pid(self.process.pid)

    def _certificate(self) -> tuple[str, str]:
        """A CA for this lab and the emulator's certificate for 127.0.0.1 and localhost: (cert, key) paths."""
        authority = trustme.CA(organization_name="openshift_agent.day2 lab BMCs")
        issued = authority.issue_cert("127.0.0.1", "localhost")
        authority.cert_pem.write_to_path(self.ca_path)
        cert, key = os.path.join(self.directory, "tls.crt"), os.path.join(self.directory, "tls.key")
        issued.cert_chain_pems[0].write_to_path(cert)
        issued.private_key_pem.write_to_path(key)
        os.chmod(key, 0o600)
        return cert, key

    def _ssl(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=self.ca_path)

    async def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=self._ssl())) as session:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(
                        f"sushy-emulator exited with {self.process.returncode}; see {self.directory}/emulator.log"
                    )
                try:
                    async with session.get(self.url + "/redfish/v1/Systems", auth=self._auth()) as response:
                        if response.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.1)
        raise RuntimeError(f"sushy-emulator did not answer within {READY_TIMEOUT:.0f} s")

    def _auth(self):
        return aiohttp.BasicAuth(USERNAME, self.password)

    def publish(self) -> None:
        """BMC variables for the inventory, and the emulator in lab.json."""
        systems = {}
        for host in self.ctx.hosts:
            systems[host["name"]] = system_id(host)
            host["bmc_address"] = f"redfish-virtualmedia+{self.url}/redfish/v1/Systems/{system_id(host)}"
            host["bmc_username"] = USERNAME
            host["bmc_password"] = self.password
            host["bmc_verify_certs"] = False
        self.ctx.lab_json["redfish"] = {
            "url": self.url,
            "username": USERNAME,
            "password": self.password,
            "systems": systems,
            "ca_path": self.ca_path,
        }

    # -- watching the BMCs ------------------------------------------------------------------------------
    async def watch(self) -> None:
        async with aiohttp.ClientSession(
            auth=self._auth(),
            timeout=aiohttp.ClientTimeout(total=10),
            connector=aiohttp.TCPConnector(ssl=self._ssl()),
        ) as session:
            while True:
                for host in self.ctx.hosts:
                    try:
                        await self._check(session, host)
                    except (aiohttp.ClientError, asyncio.TimeoutError, ValueError) as exc:
                        self.errors[host["name"]] = f"BMC not readable: {exc}"
                await asyncio.sleep(POLL_SECONDS)

    async def _check(self, session, host) -> None:
        base = f"{self.url}/redfish/v1/Systems/{system_id(host)}"
        async with session.get(base) as response:
            power = (await response.json()).get("PowerState")
        sim = self.ctx.lab_hosts.get(host["name"])
        async with session.get(base + "/VirtualMedia/Cd") as response:
            media = await response.json()
        inserted = bool(media.get("Inserted") and media.get("Image"))
        if self._inserted.get(host["name"]) and not inserted and host["name"] in self.booted:
            self.ejects.append(
                {
                    "host": host["name"],
                    "status": getattr(sim, "status", None),
                    "stage": getattr(sim, "stage", None),
                    "progress_info": getattr(sim, "progress_info", ""),
                    "phase": getattr(sim, "phase", None),
                    "at": time.time(),
                }
            )
        self._inserted[host["name"]] = inserted
        if power != "On":
            if host["name"] in self.booted:
                del self.booted[host["name"]]
                await sim.power_off()
            return
        if host["name"] in self.booted:
            return
        image = media.get("Image")
        if not (media.get("Inserted") and image):
            self.errors[host["name"]] = "powered on without virtual media: nothing to boot"
            return
        self.booted[host["name"]] = image
        path = await self._download(session, host, image)
        if path is not None:
            self.errors.pop(host["name"], None)
            await sim.boot(path, booted_by="redfish")

    async def _download(self, session, host, image) -> str | None:
        where = urllib.parse.urlsplit(image).hostname or ""
        if not any(where.startswith(prefix.strip("[]")) for prefix in LOOPBACK):
            self.errors[host["name"]] = f"virtual media URL {image} is not on 127.0.0.0/8: not downloaded"
            return None
        path = os.path.join(self.directory, f"{host['name']}.iso")
        try:
            # A BMC does not check the certificate of the media server (SUSHY_EMULATOR_VMEDIA_VERIFY_SSL off).
            async with aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=600), connector=aiohttp.TCPConnector(ssl=False)
            ) as plain:
                await self._fetch(plain, host["name"], image, path + ".part")
        except (aiohttp.ClientError, OSError, asyncio.TimeoutError, ValueError) as exc:
            self.errors[host["name"]] = f"cannot download {image}: {exc}"
            return None
        os.replace(path + ".part", path)
        return path

    async def _fetch(self, session, name, image, path) -> None:
        """HEAD for the size, then range requests, as BMCs read virtual media; a server without ranges (200)
        sends the whole image at once."""
        async with session.head(image) as response:
            response.raise_for_status()
            size = int(response.headers.get("Content-Length", "0"))
        self.ranges[name] = 0
        with open(path, "wb") as handle:
            offset = 0
            while offset < size or not size:
                ask = {"Range": f"bytes={offset}-{min(offset + RANGE_CHUNK, size) - 1}"} if size else {}
                async with session.get(image, headers=ask) as response:
                    response.raise_for_status()
                    if response.status == 200:
                        handle.seek(0)
                        handle.truncate()
                        async for chunk in response.content.iter_chunked(1 << 20):
                            handle.write(chunk)
                        return
                    if response.status != 206:
                        raise ValueError(f"{image}: HTTP {response.status} to a range request")
                    self.ranges[name] += 1
                    body = await response.read()
                    handle.write(body)
                    offset += len(body)
                    if not body:
                        raise ValueError(f"{image}: an empty range at {offset}")

    def state(self) -> dict:
        return {
            "url": self.url,
            "booted": dict(self.booted),
            "errors": dict(self.errors),
            "ejects": list(self.ejects),
            "ranges": dict(self.ranges),
        }

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                await asyncio.wait_for(asyncio.to_thread(self.process.wait), 5)
            except asyncio.TimeoutError:
                self.process.kill()


async def setup(ctx) -> None:
    if not getattr(ctx.options, "redfish", False):
        return
    boot = RedfishBoot(ctx)
    boot.start()
    ctx.on_shutdown.append(boot.stop)
    await boot.wait_ready()
    boot.publish()
    boot._task = asyncio.ensure_future(boot.watch())
    ctx.redfish = boot
    ctx.dump_sections["redfish"] = boot.state
    LOG.info("sushy-emulator on %s for %d systems", boot.url, len(ctx.hosts))
