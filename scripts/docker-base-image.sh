#!/usr/bin/env bash
# Build ssebench's base image offline and print its name (last line of stdout).
#
#   scripts/docker-base-image.sh     # DOCKER_HOST, else ssebench's private engine
#
# No registry can be pulled from here, so the image is made from Debian's own packages:
# debootstrap (bookworm, from the mirror apt already uses) into a temporary folder, then
# `docker import`. It holds what a task container needs before ssebench is added: Python 3.11
# with venv, a C toolchain with AddressSanitizer, make, git (intent diffs), and libstdc++ for
# the Node binary the agent layers copy in.
#
# Cached twice, keyed by this script's sha256 (change a package, get a new key):
#   1. the engine: image ssebench-base:bookworm-KEY (also tagged ssebench-base:bookworm) —
#      when present, the script prints the name and exits (~0.1 s);
#   2. a root filesystem tarball, $SSEBENCH_CACHE/base-image/KEY.tar (default
#      ~/.cache/ssebench) — when the engine's data root is new, `docker import` it (~7 s)
#      instead of running debootstrap again (~50 s).
set -euo pipefail

SUITE=bookworm
PACKAGES=python3,python3-venv,ca-certificates,libstdc++6,gcc,libc6-dev,make,git,procps,strace
CACHE_DIR=${SSEBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ssebench}/base-image
KEY=$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)
IMAGE="ssebench-base:$SUITE-$KEY"
ALIAS="ssebench-base:$SUITE"
TARBALL="$CACHE_DIR/$KEY.tar"

die() { echo "docker-base-image.sh: $*" >&2; exit 1; }

# The Debian mirror apt uses here (deb822 "URIs:" or one-line "deb URL SUITE main"), so the
# image comes from the same place as the host's packages; deb.debian.org otherwise.
debian_mirror() {
    local uri
    uri=$(grep -hs -A3 -E '^Types:.*deb' /etc/apt/sources.list.d/*.sources 2>/dev/null \
        | awk '/^URIs:/ {print $2}' | grep -E '/debian/?$' | head -n1 || true)
    if [ -z "$uri" ]; then
        uri=$(grep -hs -E '^deb [^ ]*/debian/? ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
            | awk '{print $2}' | head -n1 || true)
    fi
    echo "${uri:-http://deb.debian.org/debian}"
}

# The engine: DOCKER_HOST, else ssebench's private one (scripts/docker-engine.sh) when it runs.
PRIVATE_SOCK=${SSEBENCH_DOCKER_DIR:-/var/lib/ssebench/docker}/docker.sock
if [ -z "${DOCKER_HOST:-}" ] && [ -S "$PRIVATE_SOCK" ]; then export DOCKER_HOST="unix://$PRIVATE_SOCK"; fi
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 \
    || die "no Docker engine answers at ${DOCKER_HOST:-the default socket} (scripts/docker-engine.sh start)"

# One build at a time (two test workers, the Docker and the Kubernetes tests, may ask at once;
# both would write the same tarball): the second waits, then finds the image.
mkdir -p "$CACHE_DIR"
exec 9>"$CACHE_DIR/.build.lock"
flock 9

docker image inspect "$IMAGE" >/dev/null 2>&1 || {
    if [ ! -f "$TARBALL" ]; then
        command -v debootstrap >/dev/null || die "debootstrap is not installed (run: scripts/docker-engine.sh install)"
        [ "$(id -u)" = 0 ] || die "debootstrap needs root"
        WORK=$(mktemp -d "${TMPDIR:-/tmp}/ssebench-rootfs.XXXXXX")
        trap 'rm -rf "$WORK"' EXIT
        MIRROR=$(debian_mirror)
        echo "docker-base-image.sh: debootstrap $SUITE from $MIRROR" >&2
        if ! debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$WORK/rootfs" "$MIRROR" \
                >"$WORK/debootstrap.log" 2>&1; then
            tail -n 20 "$WORK/debootstrap.log" >&2
            die "debootstrap failed (log above)"
        fi
        # Nothing of the host's apt state or caches belongs in the image.
        rm -rf "$WORK/rootfs/var/cache/apt/archives/"*.deb "$WORK/rootfs/var/lib/apt/lists/"*
        tar --numeric-owner -C "$WORK/rootfs" -cf "$TARBALL.part" .
        mv "$TARBALL.part" "$TARBALL"
    fi
    echo "docker-base-image.sh: docker import $TARBALL" >&2
    docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        --change 'CMD ["/bin/bash"]' \
        "$TARBALL" "$IMAGE" >/dev/null
}
docker tag "$IMAGE" "$ALIAS"
# Earlier keys are dead weight (~480 MB each): drop their tarballs and image tags.
find "$CACHE_DIR" -maxdepth 1 -name '*.tar' ! -name "$KEY.tar" -delete 2>/dev/null || true
docker image ls ssebench-base --format '{{.Repository}}:{{.Tag}}' \
    | grep -v -x -e "$IMAGE" -e "$ALIAS" | xargs -r docker image rm >/dev/null 2>&1 || true
echo "$IMAGE"
