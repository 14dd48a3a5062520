#!/usr/bin/env bash
# up.sh: start one loopback-only test cluster and wait until it is ready:
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, TESTCLUSTER_NODES proclet
#   nodes (default 2; virtual-kubelet nodes that run pods as local processes) and SeaweedFS
#   (S3, one bucket), every one on a free 127.0.0.1 port.
# Prints TESTCLUSTER_RUN=<dir> first; when it returns 0, <dir>/env (shell, single-quoted
# values) and <dir>/env.json hold KUBECONFIG, the S3 endpoint, keys and bucket. Stop it with
# down.sh <dir>. If starting fails, what was started is stopped again (exit 1).
#   TESTCLUSTER_CACHE  where build.sh put the binaries
#   TESTCLUSTER_RUN    the run directory (default: a new mktemp directory, removed by down.sh)
#   TESTCLUSTER_NODES  how many proclet nodes (1-20, default 2)
#   TESTCLUSTER_NODE_GRACE  how long a silent node stays Ready (default 20s)
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"

tc_built || tc_die "test cluster not built: run $TC_KIT/build.sh (binaries expected in $TC_BIN)"
NODES=${TESTCLUSTER_NODES:-2}
# How long a node may stop reporting before it is NotReady (the controller-manager's
# default is 50 s; a node's lease is renewed every 10 s).
NODE_GRACE=${TESTCLUSTER_NODE_GRACE:-20s}
[[ $NODES =~ ^([1-9]|1[0-9]|20)$ ]] || tc_die "TESTCLUSTER_NODES=$NODES: want 1 to 20"
for c in curl openssl awk; do command -v $c >/dev/null || tc_die "$c is needed"; done

made_dir=1
if [ -n "${TESTCLUSTER_RUN:-}" ]; then
  if [ -d "$TESTCLUSTER_RUN" ]; then
    made_dir=0
    [ -z "$(ls -A "$TESTCLUSTER_RUN")" ] || tc_die "TESTCLUSTER_RUN=$TESTCLUSTER_RUN is not empty (a cluster may run there: down.sh it)"
  fi
  mkdir -p "$TESTCLUSTER_RUN"
  RUN=$(cd "$TESTCLUSTER_RUN" && pwd)
else
  RUN=$(mktemp -d "${TMPDIR:-/tmp}/mcp-harness-testcluster.XXXXXX")
fi
echo "TESTCLUSTER_RUN=$RUN"
echo "$made_dir" >"$RUN/.made-by-up"
: >"$RUN/pids"
mkdir -p "$RUN/logs" "$RUN/pods" "$RUN/s3/data"
case "$RUN" in *[[:space:]\'\"\\\$\`]*)
  "$TC_KIT/down.sh" "$RUN" >/dev/null 2>&1
  tc_die "the run directory's path must not hold spaces or quotes: $RUN" ;;
esac
# SeaweedFS puts unix sockets beside its ports; their paths must fit in 108 bytes.
[ ${#RUN} -le 80 ] || { "$TC_KIT/down.sh" "$RUN" >/dev/null 2>&1; tc_die "run directory path too long (${#RUN} > 80): $RUN"; }

ready=0
on_exit() {
  [ $ready = 1 ] && return
  echo "testcluster: start failed; the last log lines:" >&2
  for f in "$RUN"/logs/*.log; do
    [ -s "$f" ] && { echo "--- ${f##*/}" >&2; tail -5 "$f" >&2; }
  done
  "$TC_KIT/down.sh" "$RUN" >&2 || true
}
trap on_exit EXIT
trap 'exit 1' INT TERM HUP

t0=$(tc_now)
el() { echo "testcluster: $(tc_since "$t0")s $*"; }
# start NAME EXE ARG...: run EXE in the background in $RUN, log in logs/NAME.log; pids gets
# "NAME PID STARTTIME EXE" (the start time tells the process from a later one with its pid).
start() {
  local name=$1 exe=$TC_BIN/$2
  shift 2
  (cd "$RUN" && exec "$exe" "$@") >"$RUN/logs/$name.log" 2>&1 </dev/null &
  echo "$name $! $(tc_starttime $! || echo gone) $exe" >>"$RUN/pids"
  disown $! # down.sh may stop it while up.sh runs: no "Killed" job notices
}
# alive NAME: the process recorded as NAME still runs (for the waits: a crash fails fast).
alive() {
  local pid start
  read -r pid start < <(awk -v n="$1" '$1 == n { print $2, $3 }' "$RUN/pids")
  tc_proc_is "$pid" "$start" || { echo "testcluster: $1 exited (see logs/$1.log)" >&2; return 1; }
}
# wait_for SECONDS NAME CMD...: run CMD every 0.2 s until it succeeds; fail after SECONDS,
# or at once when NAME's process has exited.
wait_for() {
  local limit=$1 name=$2 t
  shift 2
  t=$(tc_now)
  until "$@" >/dev/null 2>&1; do
    alive "$name" || return 1
    if awk -v a="$t" -v b="$(tc_now)" -v l="$limit" 'BEGIN { exit !(b - a > l) }'; then
      echo "testcluster: $name: not ready after ${limit}s" >&2
      return 1
    fi
    sleep 0.2
  done
}

ETCD=$(tc_free_port) ETCD_PEER=$(tc_free_port) ETCD_METRICS=$(tc_free_port)
API=$(tc_free_port) KCM=$(tc_free_port) SCHED=$(tc_free_port)
S3=$(tc_free_port) S3_GRPC=$(tc_free_port) MASTER=$(tc_free_port) MASTER_GRPC=$(tc_free_port)
VOLUME=$(tc_free_port) VOLUME_GRPC=$(tc_free_port) FILER=$(tc_free_port) FILER_GRPC=$(tc_free_port)
NODE_PORTS=()
for i in $(seq 0 $((NODES - 1))); do NODE_PORTS+=("$(tc_free_port)"); done
for p in "master $MASTER_GRPC" "volume $VOLUME_GRPC" "filer $FILER_GRPC" "s3 $S3_GRPC"; do
  echo "/tmp/seaweedfs-${p% *}-grpc-${p#* }.sock"
done >"$RUN/sockets"
PKI=$RUN/pki
KC=$RUN/kubeconfig
BUCKET=artifacts AK=testkey SK=testsecret REGION=us-east-1

# SeaweedFS first: it takes the longest to answer (about 2.5 s), so it starts meanwhile.
# -ip: the default is the machine's address; -master.telemetry: on by default;
# -volume.preStopSeconds: 10 s of waiting at every stop by default.
start weed weed server -dir="$RUN/s3/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
  -master.port="$MASTER" -master.port.grpc="$MASTER_GRPC" -master.telemetry=false -master.volumeSizeLimitMB=64 \
  -volume.port="$VOLUME" -volume.port.grpc="$VOLUME_GRPC" -volume.max=8 -volume.preStopSeconds=0 \
  -filer -filer.port="$FILER" -filer.port.grpc="$FILER_GRPC" -filer.localSocket="$RUN/s3/filer.sock" \
  -s3 -s3.port="$S3" -s3.port.grpc="$S3_GRPC" -s3.localSocket="$RUN/s3/s3.sock" \
  -s3.port.iceberg=0 -s3.port.lance=0 -s3.config="$TC_KIT/lib/s3.json"

"$TC_KIT/lib/mkcerts.sh" "$PKI" "$API"
el "certificates made"

start etcd etcd --name default --data-dir "$RUN/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD" --advertise-client-urls "http://127.0.0.1:$ETCD" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
  --initial-cluster "default=http://127.0.0.1:$ETCD_PEER" --listen-metrics-urls "http://127.0.0.1:$ETCD_METRICS" \
  --unsafe-no-fsync --log-level warn
wait_for 30 etcd curl -sf "http://127.0.0.1:$ETCD/health"
el "etcd healthy"

start kube-apiserver kube-apiserver --etcd-servers="http://127.0.0.1:$ETCD" \
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API" --cert-dir="$RUN/apiserver-certs" \
  --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" --client-ca-file="$PKI/ca.crt" \
  --service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$PKI/sa.pub" \
  --service-account-signing-key-file="$PKI/sa.key" --service-cluster-ip-range=10.0.0.0/24 \
  --authorization-mode=Node,RBAC --endpoint-reconciler-type=none \
  --kubelet-client-certificate="$PKI/kubelet-client.crt" --kubelet-client-key="$PKI/kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP --profiling=false --v=1
kapi() { curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "https://127.0.0.1:$API$1"; }
wait_for 90 kube-apiserver kapi /readyz
el "kube-apiserver ready on :$API"

start kube-controller-manager kube-controller-manager --kubeconfig="$KC" \
  --authentication-kubeconfig="$KC" --authorization-kubeconfig="$KC" --bind-address=127.0.0.1 --secure-port="$KCM" \
  --leader-elect=false --use-service-account-credentials=false \
  --node-monitor-grace-period="$NODE_GRACE" --node-monitor-period=2s \
  --controllers=job-controller,serviceaccount-controller,serviceaccount-token-controller,garbage-collector-controller,ttl-after-finished-controller,pod-garbage-collector-controller,namespace-controller,node-lifecycle-controller,root-ca-certificate-publisher-controller \
  --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" --profiling=false --v=1
start kube-scheduler kube-scheduler --kubeconfig="$KC" \
  --authentication-kubeconfig="$KC" --authorization-kubeconfig="$KC" --bind-address=127.0.0.1 --secure-port="$SCHED" \
  --leader-elect=false --profiling=false --v=1
NODE_NAMES=()
for i in $(seq 0 $((NODES - 1))); do
  NODE_NAMES+=("proclet-$i")
  mkdir -p "$RUN/pods/proclet-$i"
  start "proclet-$i" proclet --kubeconfig="$KC" --node-name="proclet-$i" --ip=127.0.0.1 \
    --port="${NODE_PORTS[$i]}" --dir="$RUN/pods/proclet-$i"
done
node_ready() { kapi "/api/v1/nodes/$1" | tr -d ' \n' | grep -q '"type":"Ready","status":"True"'; }
for n in "${NODE_NAMES[@]}"; do
  wait_for 60 "$n" node_ready "$n"
done
el "$NODES proclet node(s) Ready: ${NODE_NAMES[*]}"
wait_for 30 kube-controller-manager curl -sfk "https://127.0.0.1:$KCM/healthz"
wait_for 30 kube-scheduler curl -sfk "https://127.0.0.1:$SCHED/healthz"
# Pods are refused until the namespace's default ServiceAccount exists.
wait_for 30 kube-controller-manager kapi /api/v1/namespaces/default/serviceaccounts/default
el "controller-manager and scheduler healthy; serviceaccount default/default exists"

s3() { # METHOD PATH: a SigV4-signed request (curl 7.75 or later)
  curl -sf -o /dev/null -X "$1" --aws-sigv4 "aws:amz:$REGION:s3" --user "$AK:$SK" "http://127.0.0.1:$S3$2"
}
s3_answers() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$S3/" | grep -qE '^(200|403)$'; }
wait_for 60 weed s3_answers
wait_for 30 weed s3 PUT "/$BUCKET"
wait_for 30 weed s3 GET "/$BUCKET?list-type=2"
el "SeaweedFS S3 on :$S3, bucket $BUCKET"

S3_EP=http://127.0.0.1:$S3
cat >"$RUN/env.tmp" <<ENV
TESTCLUSTER_RUN='$RUN'
TESTCLUSTER_BIN='$TC_BIN'
KUBECONFIG='$KC'
TESTCLUSTER_APISERVER='https://127.0.0.1:$API'
TESTCLUSTER_CA='$PKI/ca.crt'
TESTCLUSTER_CLIENT_CERT='$PKI/admin.crt'
TESTCLUSTER_CLIENT_KEY='$PKI/admin.key'
TESTCLUSTER_NAMESPACE='default'
TESTCLUSTER_NODES='$NODES'
TESTCLUSTER_NODE_NAMES='$(IFS=,; echo "${NODE_NAMES[*]}")'
TESTCLUSTER_S3_ENDPOINT='$S3_EP'
TESTCLUSTER_S3_REGION='$REGION'
TESTCLUSTER_S3_BUCKET='$BUCKET'
TESTCLUSTER_S3_URL='s3://$BUCKET?endpoint=http%3A%2F%2F127.0.0.1%3A$S3&region=$REGION&use_path_style=true&disable_https=true'
AWS_ACCESS_KEY_ID='$AK'
AWS_SECRET_ACCESS_KEY='$SK'
AWS_REGION='$REGION'
AWS_EC2_METADATA_DISABLED='true'
ENV
# The same as JSON, for programs that read no shell.
awk -F= 'BEGIN { printf "{" } { v = substr($0, length($1) + 2); gsub(/^'\''|'\''$/, "", v);
  printf "%s\n  \"%s\": \"%s\"", (NR > 1 ? "," : ""), $1, v } END { print "\n}" }' "$RUN/env.tmp" >"$RUN/env.json"
mv "$RUN/env.tmp" "$RUN/env"
ready=1
el "ready: $NODES node(s), S3 $S3_EP; use it with:  set -a; . $RUN/env; set +a"
