#!/usr/bin/env bash
# Start or stop a private Docker engine for the Docker sandbox tests and CI.
#
#   eval "$(.ci/docker-setup.sh start)"     # installs docker.io + debootstrap if missing, prints `export DOCKER_HOST=...`
#   .ci/docker-setup.sh status               # exit 0 when the private engine answers
#   .ci/docker-setup.sh stop [--keep-data]   # stops it and removes every trace (--keep-data: keep the image cache)
#
# Why a private engine: there is no system dockerd on the project machines, nothing may listen outside
# loopback, and whoever starts an engine must also remove what it leaves behind. dockerd gets its own data
# root, exec root, pidfile and unix socket under COMPANYSIM_DOCKER_DIR (default /tmp/companysim-docker), and
# runs with no bridge and no iptables changes: the sandbox only uses `--network none`. `stop` still removes the
# leftovers a default dockerd is known to leave (DOCKER iptables chains, FORWARD policy DROP, the 172.17/16
# MASQUERADE rule, the docker0 link, nsfs mounts), in case an engine was started some other way. It never
# touches them while some other dockerd is running.
#
# Needs root. Env: COMPANYSIM_DOCKER_DIR (run dir), COMPANYSIM_DOCKER_DATA (data root, default $DIR/data;
# keep it to reuse the sandbox image across runs).
set -euo pipefail

DIR="${COMPANYSIM_DOCKER_DIR:-/tmp/companysim-docker}"
DATA="${COMPANYSIM_DOCKER_DATA:-$DIR/data}"
EXEC="$DIR/exec"
SOCK="$DIR/docker.sock"
PIDFILE="$DIR/dockerd.pid"
LOG="$DIR/dockerd.log"
FORWARD_SAVED="$DIR/ip_forward.saved"
DOCKER_CLI=/usr/bin/docker # the docker.io client; the docker 28 client first on PATH may lack plugins
HOST="unix://$SOCK"

log() { echo "docker-setup: $*" >&2; }

need_root() {
    if [ "$(id -u)" -ne 0 ]; then
        log "must run as root (dockerd needs it)"
        exit 1
    fi
}

alive() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

answers() { [ -S "$SOCK" ] && "$DOCKER_CLI" -H "$HOST" version --format '{{.Server.Version}}' >/dev/null 2>&1; }

install_missing() {
    local missing=()
    command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
    [ -x "$DOCKER_CLI" ] || missing+=(docker.io)
    command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
    if [ "${#missing[@]}" -eq 0 ]; then
        return
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        log "missing ${missing[*]} and no apt-get to install them"
        exit 1
    fi
    log "installing docker.io debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io debootstrap >&2
}

start() {
    need_root
    install_missing
    if alive; then
        # Ours is running: give a starting engine time to answer; never start a second one on the same data root.
        local tries=0
        until answers || [ "$tries" -ge 100 ]; do
            sleep 0.1
            tries=$((tries + 1))
        done
        if answers; then
            log "already running (pid $(cat "$PIDFILE"))"
            echo "export DOCKER_HOST=$HOST"
            return
        fi
        log "dockerd $(cat "$PIDFILE") runs but does not answer; restarting it"
        stop_engine
    fi
    mkdir -p "$DIR" "$EXEC" "$DATA"
    chmod 0711 "$DIR"
    [ -f "$FORWARD_SAVED" ] || cat /proc/sys/net/ipv4/ip_forward >"$FORWARD_SAVED"
    rm -f "$SOCK" "$PIDFILE"
    # setsid: the engine must not die with the shell (or pytest worker) that started it, nor get its signals.
    setsid dockerd \
        --data-root "$DATA" --exec-root "$EXEC" -H "$HOST" --pidfile "$PIDFILE" \
        --bridge=none --iptables=false --ip-forward=false --ip-masq=false --log-driver=none >"$LOG" 2>&1 </dev/null &
    local waited=0
    until answers; do
        if [ "$waited" -ge 300 ]; then # 30 s
            log "dockerd did not answer within 30 s; last log lines:"
            tail -n 20 "$LOG" >&2 || true
            stop_engine
            exit 1
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
    log "dockerd $(cat "$PIDFILE") ready on $HOST (data root $DATA)"
    echo "export DOCKER_HOST=$HOST"
}

wait_gone() { # pid, tenths of a second
    local pid="$1" n=0
    while kill -0 "$pid" 2>/dev/null && [ "$n" -lt "$2" ]; do
        sleep 0.1
        n=$((n + 1))
    done
    ! kill -0 "$pid" 2>/dev/null
}

stop_engine() {
    local containerd_pid=""
    [ -f "$EXEC/containerd/containerd.pid" ] && containerd_pid="$(cat "$EXEC/containerd/containerd.pid")"
    if alive; then
        local pid
        pid="$(cat "$PIDFILE")"
        if answers; then
            local ids
            ids="$("$DOCKER_CLI" -H "$HOST" ps -aq 2>/dev/null || true)"
            [ -z "$ids" ] || "$DOCKER_CLI" -H "$HOST" rm -f $ids >/dev/null 2>&1 || true
        fi
        kill -TERM "$pid" 2>/dev/null || true
        if ! wait_gone "$pid" 200; then
            log "dockerd $pid ignored SIGTERM for 20 s; killing it"
            kill -KILL "$pid" 2>/dev/null || true
            wait_gone "$pid" 50 || true
        fi
    fi
    if [ -n "$containerd_pid" ] && kill -0 "$containerd_pid" 2>/dev/null; then
        kill -TERM "$containerd_pid" 2>/dev/null || true
        wait_gone "$containerd_pid" 50 || kill -KILL "$containerd_pid" 2>/dev/null || true
    fi
}

other_dockerd() { # another engine owns the host's docker iptables chains and docker0: leave them alone
    local pid own=""
    [ -f "$PIDFILE" ] && own="$(cat "$PIDFILE")"
    for pid in $(pgrep -x dockerd 2>/dev/null || true); do
        [ "$pid" = "$own" ] || return 0
    done
    return 1
}

clean_network() {
    if other_dockerd; then
        log "another dockerd is running: leaving iptables and docker0 as they are"
        return
    fi
    if command -v iptables >/dev/null 2>&1; then
        iptables -D FORWARD -j DOCKER-USER 2>/dev/null || true
        iptables -D FORWARD -j DOCKER-ISOLATION-STAGE-1 2>/dev/null || true
        iptables -D FORWARD -o docker0 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT 2>/dev/null || true
        iptables -D FORWARD -o docker0 -j DOCKER 2>/dev/null || true
        iptables -D FORWARD -i docker0 ! -o docker0 -j ACCEPT 2>/dev/null || true
        iptables -D FORWARD -i docker0 -o docker0 -j ACCEPT 2>/dev/null || true
        iptables -t nat -D PREROUTING -m addrtype --dst-type LOCAL -j DOCKER 2>/dev/null || true
        iptables -t nat -D OUTPUT ! -d 127.0.0.0/8 -m addrtype --dst-type LOCAL -j DOCKER 2>/dev/null || true
        iptables -t nat -D POSTROUTING -s 172.17.0.0/16 ! -o docker0 -j MASQUERADE 2>/dev/null || true
        local table chain
        for table in filter nat; do
            for chain in DOCKER DOCKER-ISOLATION-STAGE-1 DOCKER-ISOLATION-STAGE-2 DOCKER-USER; do
                iptables -t "$table" -F "$chain" 2>/dev/null || true
                iptables -t "$table" -X "$chain" 2>/dev/null || true
            done
        done
        iptables -P FORWARD ACCEPT 2>/dev/null || true
    fi
    if ip link show docker0 >/dev/null 2>&1; then
        ip link delete docker0 2>/dev/null || true
    fi
    if [ -f "$FORWARD_SAVED" ]; then
        cat "$FORWARD_SAVED" >/proc/sys/net/ipv4/ip_forward 2>/dev/null || true
    fi
}

unmount_under() { # deepest first; nsfs (netns) and overlay mounts left by a killed engine
    local target
    awk -v d="$1" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r | while read -r target; do
        umount -l "$target" 2>/dev/null || true
    done
}

stop() {
    need_root
    local keep_data=0
    [ "${1:-}" = "--keep-data" ] && keep_data=1
    stop_engine
    clean_network
    unmount_under "$EXEC"
    unmount_under "$DATA"
    unmount_under /run/docker/netns
    if [ "$keep_data" -eq 1 ]; then
        rm -rf "$EXEC" "$SOCK" "$PIDFILE" "$FORWARD_SAVED"
        log "stopped; kept the data root $DATA"
    else
        rm -rf "$DATA" "$DIR"
        log "stopped; removed $DIR"
    fi
}

case "${1:-}" in
start) start ;;
stop) stop "${2:-}" ;;
status)
    if alive && answers; then
        echo "export DOCKER_HOST=$HOST"
    else
        exit 1
    fi
    ;;
*)
    echo "usage: $0 start | stop [--keep-data] | status" >&2
    exit 2
    ;;
esac
