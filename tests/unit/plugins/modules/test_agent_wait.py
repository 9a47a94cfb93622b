# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The documentation of agent_wait and csr_approve (plugins/modules/, doc fragment ``follow``) says what the engine
takes and returns: every option with its type, default, choices, and every documented return key.

The modules are documentation only; their argument specs are plugins/module_utils/_join/engine.py's
AGENT_WAIT_OPTIONS and CSR_APPROVE_OPTIONS plus kubernetes.core's login options (fragment
kubernetes.core.k8s_auth_options, not compared here). csr_approve's action plugin adds its eject options, compared in
tests/unit/plugins/action/test_agent_wait_csr_approve.py (ansible-test runs module tests without the controller's
plugins).
"""

import datetime

import pytest
import yaml

from ansible_collections.openshift_agent.day2.plugins.doc_fragments import follow as follow_fragment
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import engine
from ansible_collections.openshift_agent.day2.plugins.modules import agent_wait, csr_approve
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.agent_fakes import TOKEN, free_port
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.csr_fake_api import (
    FakeApi,
    FakeClock,
    api_client,
    legit_client,
)

FACES = [
    pytest.param(agent_wait, engine.AGENT_WAIT_OPTIONS, id="agent_wait"),
    pytest.param(csr_approve, engine.CSR_APPROVE_OPTIONS, id="csr_approve"),
]
# What csr_approve's action plugin adds to the engine's options (the eject of the virtual CD).
EJECT_OPTIONS = {"eject", "bmc_verify_certs", "bmc_ca_path", "redfish_timeout"}


def documented_options(module):
    doc = yaml.safe_load(module.DOCUMENTATION)
    assert {"kubernetes.core.k8s_auth_options", "openshift_agent.day2.follow"} <= set(
        doc["extends_documentation_fragment"]
    )
    options = dict(yaml.safe_load(follow_fragment.ModuleDocFragment.DOCUMENTATION)["options"])
    options.update(doc.get("options") or {})
    return options


def test_the_fragment_is_the_shared_options():
    fragment = yaml.safe_load(follow_fragment.ModuleDocFragment.DOCUMENTATION)["options"]
    assert sorted(fragment) == sorted(engine.FOLLOW_OPTIONS)


@pytest.mark.parametrize("module, spec", FACES)
def test_every_option_is_documented_as_the_spec_takes_it(module, spec):
    documented = documented_options(module)
    assert sorted(set(documented) - (EJECT_OPTIONS if module is csr_approve else set())) == sorted(spec)
    for name, option in spec.items():
        doc = documented[name]
        assert doc.get("type", "str") == option.get("type", "str"), name
        assert doc.get("default") == option.get("default"), name
        assert doc.get("choices") == option.get("choices"), name
        assert doc.get("elements") == option.get("elements"), name
        assert bool(doc.get("required")) == bool(option.get("required")), name
        assert doc["description"], name


@pytest.mark.parametrize("module, spec", FACES)
def test_the_documented_defaults_are_the_engines(module, spec):
    """An option the task leaves out gets what the docs say (engine.Options' defaults)."""
    defaults = engine.options({k: v["default"] for k, v in spec.items() if "default" in v}, "ready", {})
    assert defaults == engine.Options(target="ready", first_header=None)


def test_the_token_never_shows():
    assert engine.FOLLOW_OPTIONS["token"]["no_log"] is True


def returned(module):
    return set(yaml.safe_load(module.RETURN))


@pytest.fixture
def connected():
    api = FakeApi(FakeClock())
    filed = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=1)
    api.put_csr(legit_client("worker-0", created=filed))
    return api, (lambda: (type("Client", (), {"client": api})(), api_client(api)))


def run_params(**more):
    """One round (wait false) of a host that does not answer: every poll is refused at once."""
    port = free_port()
    values = {"hosts": [{"name": "worker-0", "address": "127.0.1.250"}], "token": TOKEN, "wait": False}
    values.update(agent_port=port, kubelet_port=port, **more)
    return values


def test_agent_wait_returns_what_it_documents(connected):
    _api, connect = connected
    run = engine.follow(run_params(until="rebooted"), False, connect, lambda line: None)
    check = engine.follow(run_params(until="rebooted"), True, connect, lambda line: None)
    assert returned(agent_wait) <= set(run) | set(check)
    assert {"state", "reached", "problem", "phases", "phase_started", "summary", "agent"} <= set(
        run["hosts"]["worker-0"]
    )


def test_csr_approve_returns_what_it_documents(connected):
    _api, connect = connected
    run = engine.follow(run_params(), False, connect, lambda line: None)
    check = engine.follow(run_params(), True, connect, lambda line: None)
    assert returned(csr_approve) <= set(run) | set(check)
    assert {"state", "failed_in", "problem", "phases", "phase_started", "rebooted_by", "approved", "summary"} <= set(
        run["hosts"]["worker-0"]
    )
    assert set(check["would_approve"][0]) == {"name", "node", "signer", "created"}
