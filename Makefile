# Two commands for a new user: `make run` and `make test`. Both build .venv from scratch when it is missing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.DEFAULT_GOAL := help
.PHONY: help run run-fresh test quick lint unit integration bench clean manifests

## make help: list the targets.
help:
	@sed -n 's/^## //p' $(MAKEFILE_LIST)

# The out-of-tree example operator is installed next to aiokcm (--no-deps: aiokcm is this checkout), so that
# `make test` runs its tests and a broken plug-in path fails CI.
EXAMPLE := examples/greeting-operator

# kubesim is its own distribution (packaging/kubesim), named by the `sandbox` extra; both are installed from this
# checkout in one resolution (each requires the other's version).
$(STAMP): pyproject.toml packaging/kubesim/pyproject.toml $(EXAMPLE)/pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,sandbox]' -e packaging/kubesim
	$(PY) -m pip install --quiet --no-deps -e $(EXAMPLE)
	@touch $(STAMP)

## make run: start the manager against an embedded kubesim cluster, with the CRDs of config/crd and the sample
##   workloads applied and the Pipeline controller enabled too (more flags: make run ARGS="--secure-port 0").
##   The cluster is kept in .sandbox/ and the next `make run` continues it.
run: $(STAMP)
	$(VENV)/bin/aiokcm --sandbox --sandbox-data-dir .sandbox --sandbox-apply config/crd,config/samples \
		--controllers='*,pipeline' $(ARGS)

## make run-fresh: forget the kept sandbox cluster (.sandbox/kubesim.db), then `make run`.
run-fresh:
	rm -f .sandbox/kubesim.db .sandbox/kubesim.db-wal .sandbox/kubesim.db-shm
	$(MAKE) run

## make manifests: regenerate the RBAC from the controllers' `rbac` declarations: config/rbac (kustomize) and
##   charts/aiokcm/files/rbac.yaml (the chart's per-controller rules); tests/chart fails when they drift.
manifests: $(STAMP)
	$(VENV)/bin/aiokcm rbac --output-dir=config/rbac --controllers '*' --leader-elect-resource-namespace system
	$(VENV)/bin/aiokcm rbac --chart --controllers '*,pipeline' > charts/aiokcm/files/rbac.yaml

# Most of the suite waits (on kubesim, timers, child processes) rather than computes, so two pytest-xdist workers
# shorten it even on two cores. A file's tests stay on one worker: module fixtures (the chaos run, the CLI's
# one-shot processes) run once. TEST_WORKERS=0 runs everything in this process.
TEST_WORKERS ?= 2
XDIST := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)

## make test: lint (ruff, mypy strict, import-linter layers) then the whole test suite (TEST_WORKERS=2 processes),
##   then the tests of the example operator in examples/greeting-operator (its own pytest configuration).
test: $(STAMP) lint
	$(PY) -m pytest -q $(XDIST)
	$(MAKE) -C $(EXAMPLE) test PYTHON=$(abspath $(PY)) AIOKCM=$(abspath $(VENV)/bin/aiokcm)

## make quick: the test suite without the tests marked slow (those waiting seconds on timers, backoffs,
##   leases); `make test` runs them all.
quick: $(STAMP)
	$(PY) -m pytest -q $(XDIST) -m "not slow"

## make lint: ruff (lint and format check), mypy (strict) and the import-linter layer contracts.
lint: $(STAMP)
	$(VENV)/bin/ruff check manager controllers kubesim cronschedule tests benchmarks examples
	$(VENV)/bin/ruff format --check manager controllers kubesim cronschedule tests benchmarks examples
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

## make unit / make integration / make bench: parts of the suite, and the benchmarks (they print figures;
##   make bench first installs the benchmark-only extra `bench`: kopf, which make test never needs).
unit: $(STAMP)
	$(PY) -m pytest -q tests/unit

integration: $(STAMP)
	$(PY) -m pytest -q tests/integration tests/e2e

bench: $(STAMP)
	@$(PY) -c 'import kopf' 2>/dev/null || $(PY) -m pip install --quiet -e '.[test,bench]'
	@for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

## make chaos: the chaos run alone (tests/chaos/README.md): CHAOS_SECONDS of faults (default 35),
##   CHAOS_SEED to replay a run.
.PHONY: chaos
chaos: $(STAMP)
	AIOKCM_CHAOS_SECONDS=$(or $(CHAOS_SECONDS),35) AIOKCM_CHAOS_SEED=$(CHAOS_SEED) $(PY) -m pytest -q -s tests/chaos

clean:
	rm -rf $(VENV) .sandbox .pytest_cache .mypy_cache .ruff_cache *.egg-info
