#!/bin/bash
# The official ACP TypeScript SDK's client against a real `mino --acp` (part of `make test`).
# env: MINO_COMMAND  the mino executable (default <repo>/.venv/bin/mino)
set -euo pipefail
cd "$(dirname "$0")"
REPO=$(cd ../.. && pwd)
export MINO_COMMAND=${MINO_COMMAND:-$REPO/.venv/bin/mino}
export MINO_PYTHON=${MINO_PYTHON:-$REPO/.venv/bin/python}
for exe in "$MINO_COMMAND" "$MINO_PYTHON"; do
  if [ ! -x "$exe" ]; then
    echo "run.sh: $exe is not an executable; install the Python package first (make install)" >&2
    exit 2
  fi
done
npm ci --no-audit --no-fund
npm test
