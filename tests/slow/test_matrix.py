"""The resilience matrix (docs/resilience.md): every fault, interrupt and spoof of tests/slow/cases.py against
playbooks/add_workers.yml, each case on a lab of its own."""

import pytest
from cases import ROWS
from conftest import REPO
from matrix import play_case


@pytest.mark.parametrize("row", ROWS, ids=[row.case for row in ROWS])
def test_case(start_lab, tmp_path, row):
    play_case(start_lab, tmp_path, row)


def test_docs_state_every_case_with_its_outcome():
    table = (REPO / "docs" / "resilience.md").read_text()
    missing = [row.case for row in ROWS if "| %s | %s |" % (row.case, row.outcome) not in table]
    assert not missing, "docs/resilience.md lacks these rows (case | outcome): %s" % missing
