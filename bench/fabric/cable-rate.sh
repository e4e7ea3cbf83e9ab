#!/bin/bash
# bench/fabric/cable-rate.sh: what TCP gets through one emulated cable path
# of bench-fabric, against the rate the flow model (placement/sim/
# fabric_model.c) gives it. Two node namespaces on one switch bridge, each
# node cable a veth pair shaped at both ends by tests/cluster/fabric.sh's
# isle__fabric_shape (tbf, netem where the kernel has it), MTU 9000: the
# path of two nodes under one leaf. K TCP flows (python3 sockets) send
# BYTES each from node a to node b at once; per repetition the payload
# rate of all of them, first byte sent to last byte received.
#
# Usage: bench/fabric/cable-rate.sh [--gbit G] [--scale S] [--flows "1 2 4"]
#                                   [--bytes N] [--reps R]
#   --gbit   cable rate at full scale (default 800: leafspine-16's node
#            cable), --scale the bench's factor (default 0.0005)
#   --bytes  per flow (default 8000000), --reps per flow count (default 5,
#            the first a warm-up that is reported but not in the median)
# Output: one line per repetition, then per flow count the median and
# range over the repetitions after the first, the model's rate (cable
# rate x 8934/9014) and measured/model; CPU idle of the host (/proc/stat)
# over the whole run. Namespaces are named isfr-<pid>-*, removed on exit.
# Needs root; exit 77 when the host cannot make namespaces or tbf.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
gbit=800
scale=0.0005
flows="1 2 4"
bytes=8000000
reps=5
while [ $# -gt 0 ]; do
	case $1 in
	--gbit) gbit=$2; shift 2 ;;
	--scale) scale=$2; shift 2 ;;
	--flows) flows=$2; shift 2 ;;
	--bytes) bytes=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "cable-rate: unknown option $1" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "cable-rate: SKIP: needs root" >&2; exit 77; }

isle__err() { echo "cable-rate: $*" >&2; }
isle__msg() { echo "cable-rate: $*" >&2; }
# shellcheck source=tests/cluster/fabric.sh
source "$here/tests/cluster/fabric.sh"

p=isfr-$$
d=$(mktemp -d "${TMPDIR:-/tmp}/isle-cable-rate.XXXXXX")
mkdir -p "$d/fabric"
cleanup() {
	local ns
	for ns in "$p-a" "$p-b" "$p-fab"; do ip netns del "$ns" 2>/dev/null || true; done
	rm -rf "$d"
}
trap cleanup EXIT
for ns in "$p-a" "$p-b" "$p-fab"; do
	ip netns add "$ns" || { echo "cable-rate: SKIP: cannot create namespaces" >&2; exit 77; }
	ip -n "$ns" link set lo up
done
# netem as isle__fabric_up decides it: where the kernel has it
if nsenter --net="/run/netns/$p-fab" tc qdisc add dev lo root netem delay 1us 2>/dev/null; then
	echo 1 >"$d/fabric/netem"
	nsenter --net="/run/netns/$p-fab" tc qdisc del dev lo root
else
	echo 0 >"$d/fabric/netem"
fi
rate=$(awk -v g="$gbit" -v s="$scale" 'BEGIN { printf "%.0f", g * 1e9 * s }')
ip -n "$p-fab" link add b0 type bridge
ip -n "$p-fab" link set b0 up
i=0
for n in a b; do
	i=$((i + 1))
	ip link add d0 netns "$p-$n" mtu 9000 type veth peer name "n$i" netns "$p-fab" mtu 9000
	ip -n "$p-fab" link set "n$i" master b0 up
	ip -n "$p-$n" addr add "198.19.1.$((i + 1))/16" dev d0
	ip -n "$p-$n" link set d0 up
	# the leaf tier's latency, as leafspine-16's node cables
	isle__fabric_shape "$d" "$p-$n" d0 "$rate" 3 || exit 77
	isle__fabric_shape "$d" "$p-fab" "n$i" "$rate" 3 || exit 77
done

cat >"$d/flows.py" <<'EOF'
import socket, sys, threading, time
role, k, nbytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if role == "recv":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", 5201)); s.listen(k)
    print("ready", flush=True)
    ends = []
    def rd(c):
        got = 0
        while got < nbytes:
            b = c.recv(1 << 20)
            if not b: break
            got += len(b)
        ends.append((time.time(), got))
        c.close()
    ts = []
    for _ in range(k):
        c, _ = s.accept(); t = threading.Thread(target=rd, args=(c,)); t.start(); ts.append(t)
    for t in ts: t.join()
    print("end %.6f %d" % (max(e for e, _ in ends), sum(g for _, g in ends)), flush=True)
else:
    buf = b"\0" * (1 << 20)
    conns = [socket.create_connection(("198.19.1.3", 5201)) for _ in range(k)]
    def wr(c):
        left = nbytes
        while left > 0:
            left -= c.send(buf[:min(left, len(buf))])
        c.shutdown(socket.SHUT_WR)
    t0 = time.time()
    ts = [threading.Thread(target=wr, args=(c,)) for c in conns]
    for t in ts: t.start()
    for t in ts: t.join()
    print("start %.6f" % t0, flush=True)
EOF

cpu() { awk '/^cpu / { print $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9, $5 + $6 }' /proc/stat; }
read -r -a c0 <<<"$(cpu)"
model=$(awk -v r="$rate" 'BEGIN { printf "%.3f", r / 8 * 8934 / 9014 / 1e6 }')
echo "cable-rate: commit $(git -C "$here" describe --always --dirty) kernel $(uname -r) netem $(cat "$d/fabric/netem")"
echo "cable-rate: cable $gbit Gbit/s x $scale = $rate bit/s, tbf at both ends of both cables; $bytes bytes per flow; model payload rate $model MB/s"
summary=""
for k in $flows; do
	rates=()
	for ((r = 0; r < reps; r++)); do
		rm -f "$d/recv.out"
		ip netns exec "$p-b" timeout 120 python3 "$d/flows.py" recv "$k" "$bytes" >"$d/recv.out" &
		rpid=$!
		until grep -q ready "$d/recv.out" 2>/dev/null; do sleep 0.1; done
		t0=$(ip netns exec "$p-a" python3 "$d/flows.py" send "$k" "$bytes" | awk '/^start/ { print $2 }')
		wait "$rpid"
		read -r _ t1 got < <(grep '^end' "$d/recv.out")
		mbs=$(awk -v g="$got" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", g / (b - a) / 1e6 }')
		echo "flows $k rep $r bytes $got seconds $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') MB/s $mbs$([ $r = 0 ] && echo " (warm-up)")"
		[ $r = 0 ] || rates+=("$mbs")
	done
	summary+=$(printf '%s\n' "${rates[@]}" | sort -g | awk -v k="$k" -v m="$model" '
		{ v[NR] = $1 } END { med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "flows %d: median %.3f MB/s (min %.3f max %.3f, %d reps), model %.3f MB/s, measured/model %.3f\n",
			k, med, v[1], v[NR], NR, m, med / m }')$'\n'
done
read -r -a c1 <<<"$(cpu)"
printf '%s' "$summary"
awk -v t0="${c0[0]}" -v i0="${c0[1]}" -v t1="${c1[0]}" -v i1="${c1[1]}" -v l="$(cut -d' ' -f1 /proc/loadavg)" \
	'BEGIN { printf "host cpu idle %.1f%% over the run, load1 %s\n", 100 * (i1 - i0) / (t1 - t0), l }'
