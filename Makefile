# The two README commands: `make demo` (set up, then a simulated table publishing to MQTT on the
# embedded broker) and `make test` (set up, then the whole test suite against a real Mosquitto).
# Every install step lives here, so a fresh machine needs nothing done by hand.

VENV   ?= .venv
PY     := $(VENV)/bin/python
PYTEST_ARGS ?=
# Most tests wait on brokers, ptys and child processes, so more workers than cores pays (2 cores: 4 workers).
PYTEST_WORKERS ?= 4

.PHONY: setup system demo test lint conformance clean lock vendor mutation

setup: $(VENV)/.installed controller/_compiled/.built

# The modules of every round compiled by mypyc as one group (same sources, several times faster;
# controller.COMPILED_MODULES, as `pip install .` builds them), in their own folder controller/_compiled/ (a shim
# per module, the group's library controller_engine__mypyc*.so). The build reads the types of every module they
# import, so it depends on all the sources of these folders (controller.BUILD_INPUTS, the same patterns):
# controller/__init__.py falls back to the pure sources, all of them, whenever one of those is newer than this
# build. The first line removes an older layout's build, beside the sources, which Python would import first.
ENGINE_INPUTS := $(wildcard controller/game/*.py controller/strategy/*.py controller/contract/*.py cardnotation/*.py)

controller/_compiled/.built: $(VENV)/.installed $(ENGINE_INPUTS)
	rm -f controller/game/*.so controller/strategy/*.so controller_engine__mypyc*.so controller/game/.compiled
	TABLECTL_REQUIRE_COMPILED=1 $(PY) setup.py -q build_ext --inplace > build-mypyc.log 2>&1 || (cat build-mypyc.log; exit 1)
	touch $@

# The versions CI tested (requirements.lock, `make lock` after a deliberate upgrade) constrain every install.
$(VENV)/.installed: pyproject.toml requirements.lock
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	TABLECTL_PURE_BUILD=1 $(PY) -m pip install -q -c requirements.lock -e '.[test]'
	touch $@

lock: $(VENV)/.installed
	$(PY) -m pip freeze --exclude-editable | grep -iv '^blackjack-table-controller' > requirements.lock

# The dashboard's mqtt.js and uPlot bundles are vendored in controller/web/vendor/ (package data: no npm on a
# table PC or in CI); after changing a version in package.json, refresh them here.
vendor:
	npm ci --no-audit --no-fund --loglevel=error
	cp node_modules/mqtt/dist/mqtt.min.js controller/web/vendor/mqtt.min.js
	cp node_modules/mqtt/LICENSE.md controller/web/vendor/mqtt.js-LICENSE.md
	cp node_modules/uplot/dist/uPlot.iife.min.js node_modules/uplot/dist/uPlot.min.css controller/web/vendor/
	cp node_modules/uplot/LICENSE controller/web/vendor/uPlot-LICENSE

# System packages the integration and browser tests need (Debian): a real broker, its command-line clients
# (the docs' mosquitto_sub examples are run by a test), a browser, and PostgreSQL for the central recorder's
# database (tests/postgres.py runs its own server in a temporary directory; the package's cluster is not used).
system:
	@command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mosquitto)
	@command -v mosquitto_sub >/dev/null 2>&1 || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mosquitto-clients)
	@command -v chromium >/dev/null 2>&1 || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver)
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql)

# Ctrl-C stops the demo, and make exits with the demo's status (0): on a terminal the recipe's shell runs the
# demo as a job of its own (set -m), the terminal's foreground, so the SIGINT of Ctrl-C reaches the demo alone
# (make, signalled too, would die of it: exit 130 whatever the demo did). Without a terminal, as it was.
demo: setup
	@if [ -t 0 ]; then set -m; fi; $(VENV)/bin/tablectl demo $(DEMO_ARGS)

test: setup system
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(MAKE) --no-print-directory conformance
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

# A lab's evidence for every shipped profile (docs/conformance.md), from the INSTALLED package as a lab has it: the
# wheel `pip install .` builds, installed (not editable) into a throwaway venv, run outside the checkout. Exit 1 on a
# failing scenario or an uncovered clause.
CONFORMANCE_VENV := build/conformance-venv
conformance: setup
	rm -rf $(CONFORMANCE_VENV) build/conformance-dist
	$(PY) -m pip wheel -q --no-deps -w build/conformance-dist . && rm -rf blackjack_table_controller.egg-info
	python3 -m venv $(CONFORMANCE_VENV)
	$(CONFORMANCE_VENV)/bin/python -m pip install -q -c requirements.lock build/conformance-dist/*.whl
	@for p in config/profiles/*.toml; do \
	  (cd / && env -u PYTHONPATH $(CURDIR)/$(CONFORMANCE_VENV)/bin/tablectl conformance $$(basename $$p .toml) --json) \
	    > build/conformance.json || { echo "conformance failed: $$p"; exit 1; }; \
	  $(PY) -c 'import json,sys; u=json.load(open("build/conformance.json"))["uncovered"]; sys.exit(f"uncovered clauses: {u}" if u else 0)' \
	    || { echo "conformance: $$p has clauses no scenario covers"; exit 1; }; \
	  echo "conformance: $$(basename $$p .toml) ok (installed package)"; \
	done; rm -rf $(CONFORMANCE_VENV) build/conformance-dist build/conformance.json

lint: setup
	$(PY) -m ruff check .
	$(PY) -m mypy

# Mutation testing (benchmarks/mutation.py, docs/testing.md): mutmut, the `mutation` extra, plants small bugs in the
# modules that guard money, records and access and runs their unit tests on each. A benchmark, not CI: it takes long.
# MUTATION_ARGS: targets and options, e.g. `make mutation MUTATION_ARGS="hold ratings-book --show"`.
MUTATION_ARGS ?=

$(VENV)/.mutation: $(VENV)/.installed
	TABLECTL_PURE_BUILD=1 $(PY) -m pip install -q -c requirements.lock -e '.[test,mutation]'
	touch $@

mutation: setup $(VENV)/.mutation
	$(PY) benchmarks/mutation.py $(MUTATION_ARGS)

clean:
	rm -rf $(VENV) node_modules .mypy_cache .pytest_cache .ruff_cache build build-mypyc.log controller/_compiled
