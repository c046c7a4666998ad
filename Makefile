# The README's two commands: `make plan` and `make test`. Both create .venv when it is missing
# and install the project (with its test and Ray extras) from pyproject.toml; nothing else is
# assumed on the machine but Python 3.11 and make.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
JOBS   ?= 2
# the project's packages, byte-compiled before a run: every test that runs `rlplan` as a user
# does starts a fresh interpreter, and where PYTHONDONTWRITEBYTECODE is set (containers, CI
# images) each of those would otherwise compile ~150 modules from source again (0.6 s a start)
PACKAGES := costmodels search formulations heuristics planner benchmarks

.PHONY: plan test test-all test-slow compile lint bench schema clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,ray]'
	@touch $(STAMP)

compile: $(STAMP)
	@$(BIN)/python -m compileall -q $(PACKAGES) > /dev/null

## plan: solve the shipped default example (HetRL testbed, GRPO sync, Qwen3-8B) into plan.json
plan: compile
	$(BIN)/rlplan plan --output plan.json
	$(BIN)/rlplan validate plan.json

## test: the unit suite, without the tests marked slow (paper reproductions, benchmark runs,
## notebooks, Ray and machine-load checks)
test: compile
	$(BIN)/python -m pytest -n $(JOBS) --dist worksteal -q -m "not slow"

## test-slow: only the tests marked slow
test-slow: compile
	$(BIN)/python -m pytest -n $(JOBS) --dist worksteal -q -m slow

## test-all: every test, slow ones included (what CI runs: .ci/run)
test-all: compile
	$(BIN)/python -m pytest -n $(JOBS) --dist worksteal -q

## lint: ruff, and the import contracts of pyproject.toml (also run by `make test`)
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache

## bench: the benchmark suites (reports, CSV/Parquet, plots) into bench-out/<suite>/
bench: $(STAMP)
	for s in circuits broadcast scenarios placement; do $(BIN)/rlplan bench --suite $$s --out bench-out/$$s --jobs $(JOBS) || exit 1; done

## schema: regenerate planner/schema/plan.schema.json after changing the plan models
schema: $(STAMP)
	$(BIN)/python -m planner.planfile

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis .grimp_cache plan.json bench-out
