"""The slow suite (make test-slow): playbooks/add_workers.yml end to end against the lab, one case per row of the
fault, interrupt and spoof matrix (tests/slow/cases.py, documented in docs/resilience.md).

It reuses the integration suite's helpers instead of copying them: tests/integration/conftest.py is loaded under
the name ``integration_conftest`` and its names are offered here too, because the integration modules this suite
imports from (test_add_workers, test_join_resilience, test_leftovers, test_day2_iso) take them from ``conftest``.
"""

import importlib.util
import sys
from pathlib import Path

import pytest

INTEGRATION = Path(__file__).resolve().parents[1] / "integration"
sys.path.insert(0, str(INTEGRATION))

_spec = importlib.util.spec_from_file_location("integration_conftest", INTEGRATION / "conftest.py")
integration = importlib.util.module_from_spec(_spec)
sys.modules["integration_conftest"] = integration
_spec.loader.exec_module(integration)

# Re-exported for the integration modules imported below (``from conftest import ...``).
LABCTL = integration.LABCTL
REPO = integration.REPO
VENV_BIN = integration.VENV_BIN
Lab = integration.Lab
ansible_env = integration.ansible_env
is_discovery = integration.is_discovery
lab_env = integration.lab_env
labctl = integration.labctl
run_ansible = integration.run_ansible
run_module = integration.run_module
run_playbook = integration.run_playbook
state_writes = integration.state_writes


@pytest.fixture
def start_lab(tmp_path):
    """Start one lab for one case (labs are not shared: every case starts from a clean cluster); stop it after."""
    started = []

    def start(*args):
        state = tmp_path / ("lab%d" % len(started))
        state.mkdir()
        started.append(state)
        labctl("start", "--state", str(state), *args)
        return Lab(state)

    yield start
    for state in started:
        labctl("stop", "--state", str(state), check=False)
