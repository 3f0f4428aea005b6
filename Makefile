# Two commands: `make run` (set up, build the demo store, start the app) and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
DEMO_DB := demo_store/foil.db
PORT ?= 8501

.PHONY: run test suite test-fast check lint types demo docs docs-check clean chromium postgresql mutation stateful

# The checkout is installed editable: `foil` and `python -m foil_studio.cli` run this tree.
# uv installs what pip would from the sources pip is configured with (tools/pip_sources.py), linked
# from its cache instead of unpacked again: the venv in seconds rather than minutes. Compiled to
# bytecode here as pip does: without it every `foil` a test starts compiled torch's modules again.
UV := $(VENV)/bin/uv pip install -q --compile-bytecode --python $(PY) $$($(PY) tools/pip_sources.py)

$(VENV)/.runtime: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip "uv>=0.5"
	$(UV) -r requirements.txt
	$(UV) --no-deps -e .
	touch $@

$(VENV)/.testing: $(VENV)/.runtime requirements-test.txt requirements-cluster.txt
	$(UV) -r requirements-test.txt
	touch $@

$(DEMO_DB): | $(VENV)/.runtime
	$(PY) -m foil_studio.cli demo --db $(DEMO_DB)

demo: $(VENV)/.runtime
	$(PY) -m foil_studio.cli demo --db $(DEMO_DB)

# `foil serve` prints the admin link for the port it serves on, then runs the app until Ctrl-C.
run: $(VENV)/.runtime $(DEMO_DB)
	$(PY) -m foil_studio.cli serve --db $(DEMO_DB) --port $(PORT)

# The generated blocks of README.md and docs/*.md: tables from the registries (docs/readme_tables.py)
# and example outputs printed by the commands themselves on a fresh demo store (docs/readme_outputs.py).
# `make docs CHECK=1` writes nothing and fails naming each stale file and block; `make docs-check`
# checks the tables only (no demo store, so the gate runs it with lint; a test checks the outputs).
docs: $(VENV)/.runtime
	$(PY) docs/readme_tables.py $(if $(CHECK),--check)
	$(PY) docs/readme_outputs.py $(if $(CHECK),--check)

docs-check: $(VENV)/.runtime
	$(PY) docs/readme_tables.py --check

# The browser test drives Debian's chromium (never a downloaded browser).
chromium:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } \
		|| echo "install Debian's chromium for the browser test: sudo apt-get install chromium"

# The store tests also run on PostgreSQL: a throwaway server from Debian's binaries (tests/postgres_support.py).
postgresql:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq \
		&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; } \
		|| echo "install PostgreSQL for the store tests on PostgreSQL: sudo apt-get install postgresql"

# The gate: the docs' generated tables (docs-check), lint and format (ruff), then types (mypy, scope
# in pyproject.toml) beside the whole suite (`-j2`): mypy from a cold cache takes 40 s of one core,
# which the suite's waits (browser tests wait for pages) mostly absorb. A failure of either fails
# the gate, after both have run.
# Two workers (pytest-xdist), a module's tests together on one (`loadscope`): a browser module's
# tests share its server and store, and one of them failed when its module was split across the
# workers (`worksteal`). Modules are handed out in the suite's order (`--no-loadscope-reorder`),
# the longest first (tests/conftest.py), not xdist's most-tests-first, which left the wheel and
# the fifty-annotator modules, with one and three tests, to start last. TESTING.md, "Suite time".
WORKERS := -n 2 --dist loadscope --no-loadscope-reorder
test: lint $(VENV)/.testing chromium postgresql
	$(MAKE) --no-print-directory -j2 types suite

suite: $(VENV)/.testing
	$(PY) -m pytest -q $(WORKERS) --durations=10

check: test  # the issue's name for the gate; the README says `make test`

# The inner loop: the suite without its `slow` tests, on two workers; the gate runs them all. Slow
# are the tests marked so (over 5 s each: a real process, model or many examples end to end) and
# those that drive a browser, a PostgreSQL server or a fresh venv (tests/conftest.py marks them by
# what they use).
test-fast: $(VENV)/.testing
	$(PY) -m pytest -q $(WORKERS) -m "not slow"

lint: $(VENV)/.testing docs-check
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

types: $(VENV)/.testing
	$(VENV)/bin/mypy

# The stateful test of admins and annotators with many more sequences than `make test` runs
# (TESTING.md records what it explored and found); FOIL_STATEFUL_NO_SHRINK=1 skips shrinking.
stateful: $(VENV)/.testing
	FOIL_STATEFUL_EXAMPLES=$(or $(EXAMPLES),40) FOIL_STATEFUL_STEPS=$(or $(STEPS),30) FOIL_STATEFUL_REPORT=stateful-explored.json \
		$(PY) -m pytest -q -p no:randomly --timeout=0 tests/test_stateful.py
	cat stateful-explored.json

# Mutation score of the core modules (TESTING.md); slow, so not part of `make test` or CI.
mutation: $(VENV)/.testing
	$(PY) -m pip install -q "mutmut>=3.8,<4"
	$(PY) bench/mutation_run.py $(MUTANTS)
	$(PY) -m mutmut results --all true > mutation-results.txt || true
	$(PY) bench/mutation_summary.py mutation-results.txt

clean:
	rm -rf $(VENV) demo_store .pytest_cache
