#!/usr/bin/env bash
# The Kubernetes server binaries ssebench's cluster tests run, built here from Debian's source.
#
#   scripts/kube-build.sh install   # apt-get install the build and runtime packages (once; root)
#   scripts/kube-build.sh build     # fetch + build kube-apiserver, -controller-manager, -scheduler, kubelet, pause
#   scripts/kube-build.sh background  # the build, started in the background (make test-deps: it overlaps the other tests)
#   scripts/kube-build.sh bindir    # print the folder of the built binaries (exit 1 when not built)
#
# One build at a time: `build` holds $CACHE/build.lock (flock), so a test session that asks for the
# binaries while the background build runs waits for it instead of building twice.
#
# Why a build: no package registry ships the Kubernetes server binaries, but Debian's `kubernetes`
# source package (1.20.2, the whole upstream tree with vendor/) builds them offline with Debian's
# Go, the way debian/rules does (GOPROXY=off, CGO_ENABLED=0, GOFLAGS=-mod=vendor, make WHAT=...),
# with upstream's build tags for a build without the in-tree cloud providers (providerless, KEP
# 1179) and without the Docker shim (dockerless, KEP 1985): a one-node containerd cluster uses
# neither, and leaving them out cuts the build's CPU time by a quarter (350 s against 474 s, user +
# system, fetch and code generators included; 198 s of wall time alone on 2 cores) and the
# binaries from 359 MB to 207 MB.
# The source comes through a PRIVATE sources list (deb-src lines in the cache; /etc/apt is never
# touched). Everything lives in $SSEBENCH_KUBE_CACHE (default ~/.cache/ssebench/kube), outside the
# repository, so a machine builds it once: <version>+<tags>/bin holds the results, a stamp marks
# them done.
set -euo pipefail

CACHE=${SSEBENCH_KUBE_CACHE:-$HOME/.cache/ssebench/kube}
DEB_VERSION=1.20.5+really1.20.2-1.1+deb12u1
VERSION=1.20.2
SUITE=bookworm
TAGS=providerless,dockerless
BIN="$CACHE/$VERSION+${TAGS//,/+}/bin"
BINS="kube-apiserver kube-controller-manager kube-scheduler kubelet"
PACKAGES="golang-1.19-go golang-github-modern-go-reflect2-dev etcd-server containerd runc containernetworking-plugins gcc libc6-dev dpkg-dev rsync openssl docker-registry"

die() { echo "kube-build.sh: $*" >&2; exit 1; }

have_packages() { [ -x /usr/lib/go-1.19/bin/go ] && [ -f /usr/share/gocode/src/github.com/modern-go/reflect2/go_above_118.go ] && command -v etcd >/dev/null && command -v containerd >/dev/null \
    && command -v runc >/dev/null && [ -x /usr/lib/cni/loopback ] && command -v gcc >/dev/null \
    && command -v dpkg-source >/dev/null && command -v openssl >/dev/null && command -v docker-registry >/dev/null; }

cmd_install() {
    if have_packages; then echo "kube-build.sh: the packages are installed"; return; fi
    [ "$(id -u)" = 0 ] || die "installing the packages needs root (apt-get install $PACKAGES)"
    command -v apt-get >/dev/null || die "no apt-get here: install $PACKAGES yourself"
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends $PACKAGES \
        || { apt-get -o DPkg::Lock::Timeout=900 update -q \
        && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends $PACKAGES; }
    no_registry_service
}

# docker-registry (the --registry tests' registry, run by tests/helpers/registry.py with a config of
# its own) comes with a service on :5000, all interfaces: on a machine without systemd and without a
# policy-rc.d its postinst starts it through /etc/init.d. Stop it and keep it from starting at boot.
no_registry_service() {
    [ -x /etc/init.d/docker-registry ] || return 0
    start-stop-daemon --stop --quiet --pidfile /var/run/docker-registry.pid --exec /usr/bin/docker-registry \
        --retry 10 >/dev/null 2>&1 || true
    rm -f /var/run/docker-registry.pid
    update-rc.d docker-registry disable >/dev/null 2>&1 || true
}

# apt-get options that keep every list, cache and source entry inside $CACHE/apt.
apt_private() {
    local dir="$CACHE/apt"
    mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/etc"
    echo "deb-src http://deb.debian.org/debian $SUITE main" >"$dir/etc/sources.list"
    APT_OPTS=(-o "Dir::Etc::sourcelist=$dir/etc/sources.list" -o "Dir::Etc::sourceparts=-"
        -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache" -o "APT::Sandbox::User=root")
}

fetch_source() {
    local src="$CACHE/src"
    [ -f "$src/tree/.ssebench-extracted" ] && return
    apt_private
    mkdir -p "$src"
    apt-get "${APT_OPTS[@]}" -q update
    (cd "$src" && apt-get "${APT_OPTS[@]}" -q source --download-only "kubernetes=$DEB_VERSION")
    rm -rf "$src/tree"
    (cd "$src" && dpkg-source --no-check -x "kubernetes_$DEB_VERSION.dsc" tree >/dev/null)
    touch "$src/tree/.ssebench-extracted"
}

# Kubernetes 1.20 vendors modern-go/reflect2 1.0.1, whose map iteration faults under Go >= 1.18
# (seen here: kube-apiserver died of SIGSEGV in reflect2's UnsafeIterate at its first requests);
# 1.0.2 fixed it (go_above_118.go). Debian ships 1.0.2's source: it replaces the vendored copy.
patch_reflect2() {
    local vendored="$CACHE/src/tree/vendor/github.com/modern-go/reflect2" fixed=/usr/share/gocode/src/github.com/modern-go/reflect2
    [ -f "$vendored/go_above_118.go" ] && return
    [ -f "$fixed/go_above_118.go" ] || die "golang-github-modern-go-reflect2-dev (1.0.2) is not installed (run: $0 install)"
    rm -f "$vendored"/*.go "$vendored"/*.s
    cp "$fixed"/*.go "$fixed"/*.s "$vendored/"
}

build_pause() {
    # build/pause/Makefile: CFLAGS = -Os -Wall -Werror -static; a static C binary, the Pod's sandbox.
    gcc -Os -Wall -Werror -static -DVERSION="v3.4.1-ssebench" -o "$BIN/pause" "$CACHE/src/tree/build/pause/linux/pause.c"
}

cmd_build() {
    [ -f "$BIN/.done" ] && { echo "kube-build.sh: built already ($BIN)"; return; }
    mkdir -p "$CACHE"
    exec 9>"$CACHE/build.lock"
    flock 9
    [ -f "$BIN/.done" ] && { echo "kube-build.sh: built already ($BIN)"; return; }
    have_packages || die "missing packages (run: $0 install)"
    fetch_source
    patch_reflect2
    local tree="$CACHE/src/tree" start=$SECONDS
    mkdir -p "$tree/.go/src/k8s.io" "$BIN"
    [ -L "$tree/.go/src/k8s.io/kubernetes" ] || ln -s ../../.. "$tree/.go/src/k8s.io/kubernetes"
    local whats=""
    for b in $BINS; do whats="$whats cmd/$b"; done
    (cd "$tree" && env PATH="/usr/lib/go-1.19/bin:$PATH" GOPATH="$tree/.go" \
        GOPROXY=off GOFLAGS="-mod=vendor -tags=$TAGS" CGO_ENABLED=0 HOME="$CACHE/home" \
        make WHAT="${whats# }")
    for b in $BINS; do cp "$tree/_output/bin/$b" "$BIN/$b"; done
    build_pause
    echo "$((SECONDS - start))" >"$BIN/.build-seconds"
    touch "$BIN/.done"
    echo "kube-build.sh: built $BINS pause in $((SECONDS - start))s into $BIN"
}

cmd_background() {
    [ -f "$BIN/.done" ] && return
    mkdir -p "$CACHE"
    setsid "$0" build >"$CACHE/build.log" 2>&1 </dev/null &
    echo "kube-build.sh: building in the background (log: $CACHE/build.log)"
}

cmd_bindir() { [ -f "$BIN/.done" ] || die "not built (run: $0 build)"; echo "$BIN"; }

case "${1:-}" in
    install) cmd_install ;;
    build) cmd_build ;;
    background) cmd_background ;;
    bindir) cmd_bindir ;;
    *) echo "usage: $0 install|build|background|bindir" >&2; exit 2 ;;
esac
