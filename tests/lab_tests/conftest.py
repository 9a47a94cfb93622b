"""Fixtures for testing the lab itself: one lab for the whole session, and helpers to talk to it."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys

import pytest
import requests

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LABCTL = os.path.join(REPO, "tests", "lab", "labctl")
sys.path.insert(0, os.path.join(REPO, "tests", "lab"))

# Small, so the 410 Gone test needs only a few hundred writes.
SESSION_EVENT_WINDOW = 300


def labctl(*args, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([LABCTL, *args], capture_output=True, text=True, timeout=60, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"labctl {' '.join(args)} failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return result


def token_of(kubeconfig_path: str) -> str:
    import yaml

    with open(kubeconfig_path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)["users"][0]["user"]["token"]


class Lab:
    """A running lab: ``api()`` for the API server as one of its identities, ``control()`` for the control API."""

    def __init__(self, state: str):
        self.state = state
        with open(os.path.join(state, "lab.json"), encoding="utf-8") as handle:
            self.info = json.load(handle)
        self.api_url = self.info["api_url"]
        self.control_url = self.info["control_url"]
        self.ca = os.path.join(state, "ca.crt")
        self.kubeconfig = os.path.join(state, "kubeconfig")
        self.tokens = {
            "admin": token_of(self.kubeconfig),
            "readonly": token_of(os.path.join(state, "kubeconfig-readonly")),
            "bootstrapper": token_of(os.path.join(state, "kubeconfig-bootstrapper")),
        }
        self.session = requests.Session()

    def api(
        self,
        method: str,
        path: str,
        as_user: str | None = "admin",
        body=None,
        content_type=None,
        token: str | None = None,
        cert=None,
        **kwargs,
    ) -> requests.Response:
        headers = {}
        token = token or (self.tokens[as_user] if as_user else None)
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = content_type or "application/json"
        return self.session.request(
            method,
            self.api_url + path,
            headers=headers,
            data=data,
            verify=self.ca,
            cert=cert,
            timeout=kwargs.pop("timeout", 30),
            **kwargs,
        )

    def control(self, method: str, path: str, body=None):
        response = requests.request(method, self.control_url + path, json=body, timeout=30)
        response.raise_for_status()
        return response.json()

    def host_state(self, name: str) -> dict:
        """What the control API says of the simulated host ``name``."""
        return next(host for host in self.control("GET", "/hosts") if host["name"] == name)

    def build_iso(self, path, *args: str) -> str:
        """``labctl build-iso`` (the lab's own node-joiner run for its inventory) writing ``path``."""
        labctl("build-iso", "--state", self.state, "--out", str(path), *args)
        return str(path)


@contextlib.contextmanager
def running_lab(state: str, *start_args: str):
    """``labctl start --state STATE START_ARGS...``; the running Lab, stopped on the way out."""
    labctl("start", "--state", state, *start_args)
    try:
        yield Lab(state)
    finally:
        labctl("stop", "--state", state)


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    state = str(tmp_path_factory.mktemp("lab-state"))
    with running_lab(state, "--hosts", "3", "--event-window", str(SESSION_EVENT_WINDOW)) as started:
        yield started


@pytest.fixture(scope="session")
def iso_cache(tmp_path_factory):
    """One base-ISO cache for every test of a worker: base ISOs are built once per size and architecture."""
    return str(tmp_path_factory.mktemp("isocache"))


@pytest.fixture(scope="session")
def base_iso(iso_cache):
    """The x86_64 base ISO of the ISO tests (iso_helpers.SIZE bytes)."""
    from iso_helpers import SIZE
    from lab import iso

    return iso.build_base_iso(iso_cache, SIZE)


@pytest.fixture
def no_faults(lab):
    lab.control("DELETE", "/faults")
    yield
    lab.control("DELETE", "/faults")
