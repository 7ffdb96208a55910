#!/usr/bin/env bash
# A private Docker engine for ssebench's container tests and `ssebench run --docker`.
#
#   scripts/docker-engine.sh install   # apt-get install docker.io debootstrap docker-compose (once; root)
#   scripts/docker-engine.sh start     # start our dockerd unless it already answers; prints DOCKER_HOST=...
#   scripts/docker-engine.sh stop      # stop the dockerd this script started (pidfile), wait for it
#   scripts/docker-engine.sh status    # exit 0 and print DOCKER_HOST=... when our engine answers
#
# Why a private engine: it must not touch a system Docker the user may have, and every piece of
# its state (socket, pidfile, data root, exec root, log) lives in one 0700 folder we own,
# $SSEBENCH_DOCKER_DIR (default /var/lib/ssebench/docker). The data root persists, so the base
# image and built layers are a cache between runs. No bridge and no iptables rules: containers
# run with --network host (no registry is reachable here anyway, nothing is pulled).
# Every sub-command is idempotent; `start` on a running engine costs one `docker version` call.
set -euo pipefail

STATE_DIR=${SSEBENCH_DOCKER_DIR:-/var/lib/ssebench/docker}
SOCK="$STATE_DIR/docker.sock"
PIDFILE="$STATE_DIR/dockerd.pid"
LOG="$STATE_DIR/dockerd.log"
START_TIMEOUT=${SSEBENCH_DOCKER_START_TIMEOUT:-60}
DOCKER_HOST_VALUE="unix://$SOCK"

die() { echo "docker-engine.sh: $*" >&2; exit 1; }

answers() { DOCKER_HOST="$DOCKER_HOST_VALUE" docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

have_tools() { command -v dockerd >/dev/null && command -v docker >/dev/null \
    && command -v debootstrap >/dev/null && command -v docker-compose >/dev/null; }

cmd_install() {
    if have_tools; then echo "docker-engine.sh: dockerd, docker, debootstrap and docker-compose already installed"; return; fi
    [ "$(id -u)" = 0 ] || die "installing the engine needs root (apt-get install docker.io debootstrap docker-compose)"
    command -v apt-get >/dev/null || die "no apt-get here: install dockerd, docker, debootstrap and docker-compose yourself"
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        docker.io debootstrap docker-compose
    # The docker.io package enables a system dockerd; we never use it.
}

cmd_start() {
    if answers; then echo "DOCKER_HOST=$DOCKER_HOST_VALUE"; return; fi
    command -v dockerd >/dev/null || die "dockerd is not installed (run: $0 install)"
    [ "$(id -u)" = 0 ] || die "dockerd needs root here"
    mkdir -p "$STATE_DIR"
    chmod 0700 "$STATE_DIR"
    [ -L "$STATE_DIR" ] && die "$STATE_DIR is a symlink; refusing to use it"
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
        die "dockerd (pid $(cat "$PIDFILE")) runs but does not answer on $SOCK; see $LOG"
    fi
    rm -f "$PIDFILE" "$SOCK"
    # setsid: the engine outlives this script, not the test session (the fixture calls stop).
    setsid dockerd \
        --data-root "$STATE_DIR/data" \
        --exec-root "$STATE_DIR/exec" \
        --pidfile "$PIDFILE" \
        --host "$DOCKER_HOST_VALUE" \
        --bridge=none --iptables=false --ip6tables=false \
        >"$LOG" 2>&1 </dev/null &
    local deadline=$((SECONDS + START_TIMEOUT))
    until answers; do
        if ! kill -0 $! 2>/dev/null; then
            echo "docker-engine.sh: dockerd exited while starting; last lines of $LOG:" >&2
            tail -n 15 "$LOG" >&2
            exit 1
        fi
        if [ $SECONDS -ge $deadline ]; then
            echo "docker-engine.sh: dockerd did not answer within ${START_TIMEOUT}s; last lines of $LOG:" >&2
            tail -n 15 "$LOG" >&2
            exit 1
        fi
        sleep 0.2
    done
    echo "DOCKER_HOST=$DOCKER_HOST_VALUE"
}

cmd_stop() {
    [ -f "$PIDFILE" ] || { echo "docker-engine.sh: not running"; return; }
    local pid
    pid=$(cat "$PIDFILE")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        if kill -0 "$pid" 2>/dev/null; then
            echo "docker-engine.sh: dockerd $pid did not stop in 30s; killing it" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    rm -f "$PIDFILE"
    # dockerd leaves its network-namespace mount (exec/netns/default) behind; nothing of
    # the engine may stay mounted once it is stopped.
    awk -v dir="$STATE_DIR/" 'index($2, dir) == 1 {print $2}' /proc/self/mounts | sort -r \
        | while read -r mountpoint; do umount "$mountpoint" 2>/dev/null || umount -l "$mountpoint" || true; done
    echo "docker-engine.sh: stopped"
}

cmd_status() { answers || die "not running (no answer on $SOCK)"; echo "DOCKER_HOST=$DOCKER_HOST_VALUE"; }

case "${1:-}" in
    install) cmd_install ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    *) echo "usage: $0 install|start|stop|status" >&2; exit 2 ;;
esac
