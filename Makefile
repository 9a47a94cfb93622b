# The two commands of the README: `make demo` and `make test`. Both set themselves up.
SHELL := /bin/bash

.PHONY: setup demo test units sanity lint integration lab-tests clean

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

lab-tests: setup
	.venv/bin/python -m pytest -q -n 3 tests/lab_tests

clean:
	rm -rf .build .collections tests/output .pytest_cache
