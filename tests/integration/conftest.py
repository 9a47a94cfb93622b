"""Integration tests: the collection's modules and playbooks against the lab (tests/lab)."""

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LABCTL = REPO / "tests" / "lab" / "labctl"
VENV_BIN = REPO / ".venv" / "bin"
sys.path.insert(0, str(REPO / "tests" / "lab"))

# Paths the kubernetes client asks for on its own (resource discovery); never counted as module calls.
DISCOVERY_PREFIXES = ("/version", "/api?", "/apis?", "/openapi")


def is_discovery(path):
    bare = path.split("?", 1)[0].rstrip("/")
    if bare in ("/version", "/api", "/apis", "/api/v1"):
        return True
    parts = bare.strip("/").split("/")
    return (parts[0] == "apis" and len(parts) == 3) or parts[0] == "openapi"


class Lab:
    """A running lab: paths of its files and access to its control API."""

    def __init__(self, state):
        self.state = Path(state)
        self.info = json.loads((self.state / "lab.json").read_text())
        self.kubeconfig = str(self.state / "kubeconfig")
        self.inventory = str(self.state / "inventory.yml")

    def control(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.info["control_url"].rstrip("/") + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read()
        return json.loads(text) if text else None

    def dump(self):
        return json.loads(labctl("dump", "--state", str(self.state)).stdout)

    def requests(self):
        return self.control("GET", "/requests")

    def reset_log(self):
        self.control("POST", "/reset-log", {})

    def writes(self):
        return state_writes(self.requests())


# Access reviews are POSTs the API server answers and stores nothing for (the access check asks them first).
QUESTIONS = ("selfsubjectaccessreviews", "selfsubjectrulesreviews")


def is_question(request):
    return request["path"].split("?", 1)[0].rstrip("/").endswith(QUESTIONS)


def state_writes(requests_log):
    """The requests of ``requests_log`` that could change the cluster's state."""
    return [r for r in requests_log if r["method"] not in ("GET", "HEAD", "OPTIONS") and not is_question(r)]


def labctl(*args, check=True):
    result = subprocess.run([str(LABCTL), *args], capture_output=True, text=True, timeout=120, check=False)
    if check and result.returncode != 0:
        raise AssertionError(
            "labctl %s failed (%s):\n%s\n%s" % (" ".join(args), result.returncode, result.stdout, result.stderr)
        )
    return result


@pytest.fixture(scope="module")
def lab_factory(tmp_path_factory):
    """Start labs on demand; every lab started is stopped at the end of the module."""
    started = []

    def start(*args):
        state = tmp_path_factory.mktemp("lab")
        labctl("start", "--state", str(state), *args)
        started.append(state)
        return Lab(state)

    yield start
    for state in started:
        labctl("stop", "--state", str(state), check=False)


def ansible_env(**extra):
    env = dict(os.environ)
    env.update(
        PATH="%s:%s" % (VENV_BIN, env.get("PATH", "")),
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=str(REPO / ".collections"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        ANSIBLE_LOCALHOST_WARNING="false",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
        ANSIBLE_PYTHON_INTERPRETER=str(VENV_BIN / "python"),
        # The lab's hosts live on 127.0.0.0/8, which the collection refuses for real hosts.
        OPENSHIFT_AGENT_DAY2_ALLOW_LOOPBACK="1",
    )
    for key in [k for k in env if k.startswith("K8S_AUTH_")]:
        del env[key]
    env.update(extra)
    return env


def run_module(module, args, check_mode=False, env=None, verbosity=0):
    """Run one module on localhost; return (result dict, full output)."""
    command = [str(VENV_BIN / "ansible"), "localhost", "-m", module]
    if args:
        command += ["-a", json.dumps(args)]
    if check_mode:
        command.append("--check")
    if verbosity:
        command.append("-" + "v" * verbosity)
    environment = ansible_env(
        ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", **(env or {})
    )
    proc = run_ansible(command, environment, timeout=600)
    output = proc.stdout + proc.stderr
    start = proc.stdout.find("{")
    try:
        document = json.loads(proc.stdout[start:])
    except ValueError:
        raise AssertionError("no JSON from ansible (rc %s):\n%s" % (proc.returncode, output))
    result = document["plays"][0]["tasks"][0]["hosts"]["localhost"]
    return result, output


def lab_env(lab):
    """The environment that points the collection at a lab's ports (agent_wait's environment fallbacks)."""
    return {
        "OPENSHIFT_AGENT_DAY2_AGENT_PORT": str(lab.info["agent_port"]),
        "OPENSHIFT_AGENT_DAY2_KUBELET_PORT": str(lab.info["kubelet_port"]),
    }


def run_ansible(command, environment, timeout):
    """Run an ansible command from the repository."""
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, env=environment, cwd=str(REPO), check=False
    )


def run_playbook(playbook, *args, env=None, timeout=1200):
    command = [str(VENV_BIN / "ansible-playbook"), str(playbook), *args]
    proc = run_ansible(command, ansible_env(**(env or {})), timeout)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture
def clean(lab):
    """The module's ``lab`` fixture with no fault set, before and after the test."""
    lab.control("DELETE", "/faults")
    yield lab
    lab.control("DELETE", "/faults")


# --- the collection as a user installs it: the release tarball in an empty collections path ----------------


def site_packages():
    """The directory of .venv's ``ansible_collections`` (the PyPI ansible package's collections)."""
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return subprocess.run(
        [str(VENV_BIN / "python"), "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


class Installed:
    def __init__(self, root, collections):
        self.root = root
        self.collections = collections
        self.path = collections / "ansible_collections" / "openshift_agent" / "day2"
        self.config = root / "ansible.cfg"
        self.config.write_text("")

    def env(self, lab=None):
        """A user's environment: the installed collection and the dependencies, nothing of the repository."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "K8S_AUTH_", "OPENSHIFT_AGENT_"))}
        env.update(
            PATH="%s:%s" % (VENV_BIN, env.get("PATH", "")),
            ANSIBLE_CONFIG=str(self.config),
            ANSIBLE_COLLECTIONS_PATH="%s:%s" % (self.collections, site_packages()),
            ANSIBLE_PYTHON_INTERPRETER=str(VENV_BIN / "python"),
            ANSIBLE_NOCOLOR="1",
            ANSIBLE_LOCALHOST_WARNING="false",
            ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
        )
        if lab is not None:
            env.update(OPENSHIFT_AGENT_DAY2_ALLOW_LOOPBACK="1", **lab_env(lab))
        return env

    def run(self, command, lab=None, cwd=None, timeout=900):
        proc = subprocess.run(
            [str(VENV_BIN / command[0]), *command[1:]],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env(lab),
            cwd=str(cwd or self.root),
            check=False,
        )
        return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The release tarball, built and checked by .ci/tarball.py, installed into an empty collections path."""
    root = tmp_path_factory.mktemp("user")
    build = root / "build"
    proc = subprocess.run(
        [str(VENV_BIN / "python"), str(REPO / ".ci" / "tarball.py"), "--keep", str(build)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (tarball,) = build.glob("openshift_agent-day2-*.tar.gz")
    collections = root / "collections"
    collections.mkdir()
    user = Installed(root, collections)
    rc, output = user.run(
        ["ansible-galaxy", "collection", "install", "--offline", "-p", str(collections), str(tarball)]
    )
    assert rc == 0 and "openshift_agent.day2:" in output, output
    assert sorted(p.name for p in (collections / "ansible_collections").iterdir()) == ["openshift_agent"], output
    return user
