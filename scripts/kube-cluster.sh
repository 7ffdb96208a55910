#!/usr/bin/env bash
# A private one-node Kubernetes cluster on loopback for ssebench's Kubernetes backend tests.
#
#   scripts/kube-cluster.sh start    # etcd, apiserver, controller-manager, scheduler, containerd, kubelet; prints KUBECONFIG=...
#   scripts/kube-cluster.sh stop     # stop everything this script started (pidfiles), unmount, remove the state
#   scripts/kube-cluster.sh status   # exit 0 and print KUBECONFIG=... when the node is Ready
#   scripts/kube-cluster.sh import IMAGE.tar   # ctr -n k8s.io images import (imagePullPolicy: Never)
#   scripts/kube-cluster.sh ctr ARGS...        # ctr on the node's containerd, namespace k8s.io (images ls, content get)
#
# The binaries come from scripts/kube-build.sh (Debian's kubernetes 1.20.2 source); etcd,
# containerd, runc and the CNI plugins from Debian. Everything listens on 127.0.0.1 only; the
# Pods have their own network namespaces (CNI ptp + loopback, docs/kubernetes.md), with
# `lo` and a ptp veth without masquerade; nothing on the host connects to a Pod (the agent, the
# daemon and a scripted model API talk on the Pod's loopback). All state (certificates, etcd,
# containerd's root, logs, pidfiles) is in $SSEBENCH_KUBE_DIR (default /var/lib/ssebench/kube), 0700.
# Quirks of these machines: no CAP_SYS_RESOURCE (containerd: restrict_oom_score_adj = true,
# kubelet: --oom-score-adj=0), cgroup v1 (cgroupfs driver).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
DIR=${SSEBENCH_KUBE_DIR:-/var/lib/ssebench/kube}
PORT_API=${SSEBENCH_KUBE_API_PORT:-16443}
PORT_ETCD=23791
PORT_ETCD_PEER=23801
PORT_KUBELET=10350
PORT_KUBELET_HEALTH=10348
PORT_CM=10357
PORT_SCHED=10359
# The --registry tests' registry (tests/helpers/registry.py: plain HTTP on loopback); containerd's
# CRI pulls from it over http (a loopback registry is http by default too; the mirror says so).
PORT_REGISTRY=15000
# The node is called localhost: the kubelet refuses a loopback --node-ip (its status then has no
# address at all), so the API server reaches it by its Hostname address, localhost = 127.0.0.1.
NODE=localhost
PAUSE_IMAGE=ssebench.local/pause:3.4.1
START_TIMEOUT=${SSEBENCH_KUBE_START_TIMEOUT:-120}
COMPONENTS="kubelet containerd kube-scheduler kube-controller-manager kube-apiserver etcd"  # stop order

die() { echo "kube-cluster.sh: $*" >&2; exit 1; }
api() {  # PATH: GET it from the API server as the admin (curl; no kubectl needed)
    curl -sf --cacert "$DIR/pki/ca.crt" --cert "$DIR/pki/admin.crt" --key "$DIR/pki/admin.key" \
        "https://127.0.0.1:$PORT_API$1"
}

certs() {
    local pki="$DIR/pki"
    [ -f "$pki/.done" ] && return
    mkdir -p "$pki"
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=ssebench-kube-ca" \
        -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
    cert apiserver "/CN=kube-apiserver" "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,IP:127.0.0.1,IP:10.96.0.1"
    cert admin "/O=system:masters/CN=ssebench-admin" ""
    cert kubelet "/O=system:nodes/CN=system:node:$NODE" "DNS:localhost,IP:127.0.0.1"
    openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
    openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
    touch "$pki/.done"
}

cert() {  # NAME SUBJECT SANS: a key and a certificate signed by our CA
    local pki="$DIR/pki" ext
    ext=$(mktemp)
    { echo "basicConstraints=CA:FALSE"; echo "keyUsage=digitalSignature,keyEncipherment"
      echo "extendedKeyUsage=serverAuth,clientAuth"; [ -z "$3" ] || echo "subjectAltName=$3"; } >"$ext"
    openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$pki/$1.key" -out "$pki/$1.csr" 2>/dev/null
    openssl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 30 \
        -extfile "$ext" -out "$pki/$1.crt" 2>/dev/null
    rm -f "$ext" "$pki/$1.csr"
}

kubeconfig() {
    cat >"$DIR/admin.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: ssebench
  cluster: {server: "https://127.0.0.1:$PORT_API", certificate-authority: "$DIR/pki/ca.crt"}
users:
- name: admin
  user: {client-certificate: "$DIR/pki/admin.crt", client-key: "$DIR/pki/admin.key"}
contexts:
- name: ssebench
  context: {cluster: ssebench, user: admin, namespace: default}
current-context: ssebench
EOF
    chmod 0600 "$DIR/admin.kubeconfig"
}

launch() {  # NAME CMD...: in its own session, logged, its pid recorded
    local name=$1; shift
    setsid "$@" >"$DIR/log/$name.log" 2>&1 </dev/null &
    echo $! >"$DIR/run/$name.pid"
}

alive() { [ -f "$DIR/run/$1.pid" ] && kill -0 "$(cat "$DIR/run/$1.pid")" 2>/dev/null; }

wait_until() {  # WHAT COMPONENT CHECK...: poll CHECK until it passes; fail with the component's log
    local what=$1 name=$2 deadline=$((SECONDS + START_TIMEOUT)); shift 2
    until "$@" >/dev/null 2>&1; do
        alive "$name" || { echo "kube-cluster.sh: $name exited while starting; last lines:" >&2; tail -n 15 "$DIR/log/$name.log" >&2; exit 1; }
        [ $SECONDS -lt $deadline ] || { echo "kube-cluster.sh: $what not within ${START_TIMEOUT}s; last lines of $name:" >&2; tail -n 15 "$DIR/log/$name.log" >&2; exit 1; }
        sleep 0.3
    done
}

start_control_plane() {
    local pki="$DIR/pki"
    launch etcd etcd --name ssebench --data-dir "$DIR/etcd" \
        --listen-client-urls "http://127.0.0.1:$PORT_ETCD" --advertise-client-urls "http://127.0.0.1:$PORT_ETCD" \
        --listen-peer-urls "http://127.0.0.1:$PORT_ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$PORT_ETCD_PEER" \
        --initial-cluster "ssebench=http://127.0.0.1:$PORT_ETCD_PEER"
    launch kube-apiserver "$BUILT/kube-apiserver" --bind-address 127.0.0.1 --advertise-address 127.0.0.1 \
        --secure-port "$PORT_API" --insecure-port 0 --etcd-servers "http://127.0.0.1:$PORT_ETCD" \
        --client-ca-file "$pki/ca.crt" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
        --kubelet-client-certificate "$pki/admin.crt" --kubelet-client-key "$pki/admin.key" \
        --kubelet-certificate-authority "$pki/ca.crt" --kubelet-preferred-address-types Hostname \
        --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$pki/sa.pub" \
        --service-account-signing-key-file "$pki/sa.key" --service-cluster-ip-range 10.96.0.0/24 \
        --authorization-mode Node,RBAC --feature-gates ProcMountType=true --allow-privileged=false \
        --enable-admission-plugins NodeRestriction --profiling=false
    wait_until "the API server's /readyz" kube-apiserver api /readyz
    launch kube-controller-manager "$BUILT/kube-controller-manager" --kubeconfig "$DIR/admin.kubeconfig" \
        --bind-address 127.0.0.1 --secure-port "$PORT_CM" --port 0 --leader-elect=false \
        --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
        --use-service-account-credentials=false --controllers '*,-nodeipam,-cloud-node-lifecycle' --profiling=false
    launch kube-scheduler "$BUILT/kube-scheduler" --kubeconfig "$DIR/admin.kubeconfig" --bind-address 127.0.0.1 \
        --secure-port "$PORT_SCHED" --port 0 --leader-elect=false --profiling=false
}

containerd_config() {
    mkdir -p "$DIR/cni/net.d"
    # containerd's CRI needs an eth0 with an address in the CNI result (loopback alone fails with
    # "failed to find network info for sandbox"): ptp gives one (a veth, host-local IPAM), with no
    # masquerade, so a Pod reaches nothing outside its node; the Pods' own traffic stays on lo.
    cat >"$DIR/cni/net.d/10-ssebench.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "ssebench", "plugins": [
  {"type": "ptp", "ipMasq": false, "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.0.0/24"}]],
   "dataDir": "$DIR/cni/ipam"}},
  {"type": "loopback"}]}
EOF
    cat >"$DIR/containerd.toml" <<EOF
version = 2
root = "$DIR/containerd/root"
state = "$DIR/containerd/state"
[grpc]
  address = "$DIR/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$DIR/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."127.0.0.1:$PORT_REGISTRY"]
    endpoint = ["http://127.0.0.1:$PORT_REGISTRY"]
EOF
}

pause_image() {  # the tree's build/pause, statically linked, as a one-file image
    local out="$DIR/pause-image" layer
    mkdir -p "$out/rootfs"
    cp "$BUILT/pause" "$out/rootfs/pause"
    python3 "$HERE/kube-oci-image.py" "$out/rootfs" "$PAUSE_IMAGE" /pause "$out/pause.tar"
    ctr_ images import "$out/pause.tar" >/dev/null
}

ctr_() { ctr --address "$DIR/containerd.sock" -n k8s.io "$@"; }

start_node() {
    containerd_config
    launch containerd containerd --config "$DIR/containerd.toml"
    wait_until "containerd" containerd ctr --address "$DIR/containerd.sock" version
    pause_image
    mkdir -p "$DIR/kubelet" "$DIR/seccomp/ssebench"
    cp "$HERE/../configs/docker/sandbox-seccomp.json" "$DIR/seccomp/ssebench/sandbox-seccomp.json"
    cat >"$DIR/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $PORT_KUBELET
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $PORT_KUBELET_HEALTH
tlsCertFile: $DIR/pki/kubelet.crt
tlsPrivateKeyFile: $DIR/pki/kubelet.key
authentication: {anonymous: {enabled: false}, webhook: {enabled: false}, x509: {clientCAFile: $DIR/pki/ca.crt}}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
failSwapOn: false
podPidsLimit: 4096
maxPods: 200
serializeImagePulls: false
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
featureGates: {ProcMountType: true}
EOF
    launch kubelet "$BUILT/kubelet" --kubeconfig "$DIR/admin.kubeconfig" --config "$DIR/kubelet.yaml" \
        --container-runtime remote --container-runtime-endpoint "unix://$DIR/containerd.sock" \
        --root-dir "$DIR/kubelet" --cert-dir "$DIR/kubelet/pki" --hostname-override "$NODE" \
        --seccomp-profile-root "$DIR/seccomp" --oom-score-adj 0 --network-plugin cni \
        --cni-bin-dir /usr/lib/cni --cni-conf-dir "$DIR/cni/net.d" --pod-infra-container-image "$PAUSE_IMAGE"
    wait_until "the node $NODE Ready" kubelet node_ready
}

node_ready() {  # quiet when the API server does not answer (status: one line, no traceback)
    local node
    node=$(api "/api/v1/nodes/$NODE" 2>/dev/null) || return 1
    printf '%s' "$node" | python3 -c 'import json, sys
ready = [c for c in json.load(sys.stdin)["status"].get("conditions", []) if c["type"] == "Ready"]
sys.exit(0 if ready and ready[0]["status"] == "True" else 1)'
}

cmd_start() {
    BUILT=$("$HERE/kube-build.sh" bindir) || exit 1
    if [ -f "$DIR/admin.kubeconfig" ] && node_ready; then echo "KUBECONFIG=$DIR/admin.kubeconfig"; return; fi
    [ "$(id -u)" = 0 ] || die "the cluster needs root (kubelet, containerd)"
    [ ! -L "$DIR" ] || die "$DIR is a symlink; refusing to use it"
    mkdir -p "$DIR/log" "$DIR/run" && chmod 0700 "$DIR"
    local start=$SECONDS
    certs
    kubeconfig
    start_control_plane
    start_node
    echo "$((SECONDS - start))" >"$DIR/run/start-seconds"
    echo "KUBECONFIG=$DIR/admin.kubeconfig"
}

cmd_stop() {
    [ -d "$DIR/run" ] || { echo "kube-cluster.sh: not running"; return; }
    for name in $COMPONENTS; do
        local pidfile="$DIR/run/$name.pid"
        [ -f "$pidfile" ] || continue
        local pid; pid=$(cat "$pidfile")
        [ "$name" != containerd ] || remove_tasks
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        rm -f "$pidfile"
        [ "$name" != containerd ] || stop_shims
    done
    awk -v dir="$DIR/" 'index($2, dir) == 1 {print $2}' /proc/self/mounts | sort -r \
        | while read -r mountpoint; do umount "$mountpoint" 2>/dev/null || umount -l "$mountpoint" || true; done
    rm -rf "$DIR"
    # the kubelet keeps container logs in /var/log/pods (fixed path), cleaned only by its own GC
    rm -rf /var/log/pods/*_sse-*
    echo "kube-cluster.sh: stopped"
}

remove_tasks() {  # every container our containerd runs, killed and deleted (their shims exit with them)
    local task
    for task in $(ctr_ tasks ls -q 2>/dev/null || true); do ctr_ tasks kill -s SIGKILL "$task" >/dev/null 2>&1 || true; done
    for task in $(ctr_ tasks ls -q 2>/dev/null || true); do ctr_ tasks delete -f "$task" >/dev/null 2>&1 || true; done
}

stop_shims() {  # containerd-shim-runc-v2 processes of our containerd (their -address names our socket)
    local pid
    for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $DIR/containerd.sock" || true); do
        kill -KILL "$pid" 2>/dev/null || true
    done
}

cmd_status() { node_ready || die "not running (node $NODE not Ready)"; echo "KUBECONFIG=$DIR/admin.kubeconfig"; }

cmd_import() { [ -n "${1:-}" ] || die "usage: $0 import IMAGE.tar"; ctr_ images import "$1"; }

# ctr on the node's containerd, namespace k8s.io: what jobs run asks before an import
# (ctr images ls name==REF, ctr content get DIGEST: is REF already this image?)
cmd_ctr() { [ -S "$DIR/containerd.sock" ] || die "not running (no containerd socket)"; ctr_ "$@"; }

case "${1:-}" in
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    import) cmd_import "${2:-}" ;;
    ctr) shift; cmd_ctr "$@" ;;
    *) echo "usage: $0 start|stop|status|import IMAGE.tar|ctr ARGS..." >&2; exit 2 ;;
esac
