# The two commands of the README: `make demo` and `make test`. Both set themselves up.
SHELL := /bin/bash

.PHONY: setup demo test units sanity lint format integration examples lab-tests test-slow mutation bench clean

setup:
	bash .ci/setup.sh

demo: setup
	bash .ci/demo.sh

test: setup
	bash .ci/test.sh

units: setup
	bash .ci/units.sh

sanity: setup
	bash .ci/sanity.sh

lint: setup
	bash .ci/lint.sh

integration: setup
	.venv/bin/python -m pytest -q -n 3 tests/integration

# The release tarball installed as a user installs it; the shipped examples and the README's and user guide's snippets
# run from it against the lab (part of `make integration`).
examples: setup
	.venv/bin/python -m pytest -q -p no:cacheprovider -n 3 tests/integration/test_examples.py

lab-tests: setup
	.venv/bin/python -m pytest -q -n 3 tests/lab_tests

# The fault, interrupt and spoof matrix of docs/resilience.md: add_workers.yml end to end, one lab per case.
test-slow: setup
	.venv/bin/python -m pytest -q -p no:cacheprovider -n 3 tests/slow

# Rewrites the Python files the way `make lint` checks them.
format: setup
	.venv/bin/ruff format . && .venv/bin/ruff check --fix .

# Disables each rule of the CSR approval policy in turn; every mutant must be killed by the unit table.
mutation: setup
	PYTHONPATH=.collections .venv/bin/python tests/mutation/csr_policy_mutations.py

# The benchmarks of docs/performance.md (BENCH=--quick for small sizes).
bench: setup
	bash .ci/bench.sh $(BENCH)

clean:
	rm -rf .build .collections tests/output .pytest_cache
