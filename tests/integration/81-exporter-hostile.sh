#!/bin/bash
# 81-exporter-hostile: isle-exporter under bad clients, a dying slurmctld and
# a store being written, next to a live topology/isle test cluster (4 nodes
# x 4 GPUs). All clients on loopback, all bounded.
#  1. Bad requests get HTTP errors, never a crash: garbage, a request line
#     without HTTP, 64 KiB of headers, POST, an unknown path; HEAD works.
#  2. Slow clients: 20 connections that never finish their request. Beyond
#     --max-per-ip (8) they are closed at once; the rest after
#     --connection-timeout (2 s); then scrapes work again.
#  3. Many clients: 400 scrapes from 8 parallel clients all get the whole
#     exposition; a burst of 32 parallel clients leaves the exporter with a
#     bounded number of descriptors and serving.
#  4. slurmctld killed (SIGKILL): scrapes keep answering at once, the
#     topology and nodes sources go down (isle_exporter_source_up 0) with
#     the last figures kept; after a restart they come back.
#  5. The store being written: a half-written job_<id>.json.new and a
#     truncated record are counted as partial / unreadable, never parsed
#     into figures; 200 records written as topology/isle writes them (.new,
#     then rename) while scrapes run are each counted once.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$repo/slurm_plugin/testlib.sh"
isle_pt_setup
exporter=$repo/build/bin/isle-exporter
[ -x "$exporter" ] || { echo "SKIP: $exporter not built (make)"; exit 77; }
for t in curl xargs; do
	command -v "$t" >/dev/null || { echo "SKIP: $t not installed (scripts/deps.sh)"; exit 77; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-t81.XXXXXX")
exp_pid="" writer_pid=""
cleanup() {
	[ -z "$writer_pid" ] || kill "$writer_pid" 2>/dev/null || true
	[ -z "$exp_pid" ] || kill "$exp_pid" 2>/dev/null || true
	[ -z "$exp_pid" ] || wait "$exp_pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

isle_pt_gb200 "$work" 4 4 4
isle_pt_plugstack "$work" default_mode=preferred
isle_cluster_start --nodes 4 --gpus 4 --topology isle \
	--plugin-dir "$repo/build/slurm" --plugstack "$work/plugstack.conf" \
	--etc-file "$work/isle.json" || fail "cluster did not start"
store=$(scontrol show config | awk '$1 == "StateSaveLocation" { print $3 }')/isle

"$exporter" --listen 127.0.0.1:0 --port-file "$work/port" --ttl 1 \
	--command-timeout 3 --max-connections 16 --max-per-ip 8 \
	--connection-timeout 2 2>"$work/exporter.log" &
exp_pid=$!
wait_for 20 test -s "$work/port" || fail "exporter did not start: $(cat "$work/exporter.log")"
port=$(cat "$work/port")
url=http://127.0.0.1:$port/metrics
om='Accept: application/openmetrics-text; version=1.0.0'
wait_for 30 curl -sf -o /dev/null "$url" || fail "exporter does not serve"

# metric NAME{LABELS}: its value in a scrape now ("" if absent).
metric() {
	curl -sf --max-time 5 "$url" | awk -v m="$1" '$1 == m { print $2 }'
}
metric_is() { [ "$(metric "$1")" = "$2" ]; }
want() { # metric value timeout
	wait_for "${3:-30}" metric_is "$1" "$2" || fail "$1 = '$(metric "$1")', expected $2"
}
# A whole OpenMetrics exposition within 2 s.
scrape_ok() {
	local body
	body=$(curl -sf --max-time 2 -H "$om" "$url") && [ "${body##*$'\n'}" = "# EOF" ]
}
alive() {
	kill -0 "$exp_pid" 2>/dev/null || fail "exporter died: $(tail -5 "$work/exporter.log")"
}
# Writes $2 to descriptor $1; a connection the exporter already closed
# gives EPIPE, not a SIGPIPE that ends this script.
send() {
	(
		trap '' PIPE
		printf '%b' "$2" 1>&"$1"
	) 2>/dev/null || true
}
# Raw bytes to the port; prints the status line of the answer.
raw() {
	local fd line=""
	exec {fd}<>"/dev/tcp/127.0.0.1/$port"
	send "$fd" "$1"
	read -r -t 5 -u "$fd" line || true
	exec {fd}>&-
	echo "${line%$'\r'}"
}

want 'isle_exporter_source_up{source="topology"}' 1
want 'isle_exporter_source_up{source="nodes"}' 1
want 'isle_exporter_source_up{source="store"}' 1

# --- 1. bad requests ----------------------------------------------------------
s=$(raw 'GARBAGE\r\n\r\n')
echo "garbage: $s"
[[ $s == "HTTP/1."*" 400 "* || -z $s ]] || fail "garbage got '$s'"
s=$(raw 'GET /metrics\r\n\r\n')
echo "no version: $s"
[[ $s != *" 200 "* ]] || fail "a request line without HTTP version got 200"
big=$(head -c 65536 /dev/zero | tr '\0' 'a')
s=$(raw "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: $big\r\n\r\n")
echo "64 KiB header: $s"
[[ $s == "HTTP/1.1 4"* || -z $s ]] || fail "64 KiB of headers got '$s'"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST -d x "$url")" = 405 ] || fail "POST not 405"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/nope")" = 404 ] || fail "unknown path not 404"
[ "$(curl -s -o /dev/null -w '%{http_code}' -I "$url")" = 200 ] || fail "HEAD not 200"
alive
scrape_ok || fail "no scrape after bad requests"

# --- 2. slow clients ----------------------------------------------------------
fds=()
for _ in $(seq 1 20); do
	exec {fd}<>"/dev/tcp/127.0.0.1/$port"
	send "$fd" 'GET /metrics HTTP/1.1\r\nHost: x\r\n'
	fds+=("$fd")
done
# closed: EOF now. (read: 0 data, 1 EOF, >128 timeout.)
closed_now=0
for fd in "${fds[@]}"; do
	rc=0
	read -r -t 0.3 -u "$fd" _ 2>/dev/null || rc=$?
	[ "$rc" = 1 ] && closed_now=$((closed_now + 1))
done
echo "slow clients: $closed_now of 20 closed at once (per-IP limit 8)"
[ "$closed_now" -ge 12 ] || fail "only $closed_now of 20 stalled connections refused beyond the per-IP limit"
sleep 4
closed=0
for fd in "${fds[@]}"; do
	rc=0
	read -r -t 1 -u "$fd" _ 2>/dev/null || rc=$?
	[ "$rc" = 1 ] && closed=$((closed + 1))
	exec {fd}>&-
done
[ "$closed" = 20 ] || fail "$closed of 20 stalled connections closed after the 2 s timeout"
wait_for 10 scrape_ok || fail "no scrape after the slow clients"
alive

# --- 3. many clients ----------------------------------------------------------
export url om
# shellcheck disable=SC2016 # expanded by sh -c, from the environment
seq 1 400 | xargs -P 8 -n 1 sh -c 'body=$(curl -sf --max-time 10 -H "$om" "$url") && [ "${body##*
}" = "# EOF" ] || echo bad' >"$work/many" 2>&1 || true
[ ! -s "$work/many" ] || fail "$(grep -c bad "$work/many") of 400 scrapes from 8 clients failed"
echo "many clients: 400 scrapes from 8 parallel clients, all whole"
# shellcheck disable=SC2016
seq 1 320 | xargs -P 32 -n 1 sh -c 'curl -s --max-time 10 -o /dev/null "$url" || true' &
burst=$!
maxfd=0
while kill -0 "$burst" 2>/dev/null; do
	n=$(find "/proc/$exp_pid/fd" -mindepth 1 2>/dev/null | wc -l)
	[ "$n" -gt "$maxfd" ] && maxfd=$n
	sleep 0.05
done
wait "$burst" || true
echo "burst of 32 parallel clients: at most $maxfd descriptors open in the exporter"
[ "$maxfd" -le 40 ] || fail "$maxfd descriptors open during the burst (16 connections allowed)"
alive
wait_for 10 scrape_ok || fail "no scrape after the burst"

# --- 4. slurmctld killed and restarted ---------------------------------------
free0=$(metric 'isle_gpus{state="free"}')
ctld=$(awk '$1 == "slurmctld" { print $3 }' "$ISLE_CLUSTER_DIR/pids" | tail -1)
[ -n "$ctld" ] || fail "no slurmctld pid in $ISLE_CLUSTER_DIR/pids"
kill -9 "$ctld"
want 'isle_exporter_source_up{source="topology"}' 0 30
want 'isle_exporter_source_up{source="nodes"}' 0 30
for _ in 1 2 3 4 5; do
	scrape_ok || fail "scrape failed while slurmctld is down"
	sleep 0.3
done
[ "$(metric 'isle_gpus{state="free"}')" = "$free0" ] || fail "last node figures not kept while slurmctld is down"
grep -q "isle-exporter: topology: " "$work/exporter.log" || fail "the exporter did not say why topology is down"
isle_ctld_restart 120 || fail "slurmctld did not restart"
want 'isle_exporter_source_up{source="topology"}' 1 60
want 'isle_exporter_source_up{source="nodes"}' 1 60
grep -q "topology: reads again" "$work/exporter.log" || fail "no 'reads again' in the exporter's log"
alive

# --- 5. the store being written ----------------------------------------------
wait_for 30 test -d "$store" || mkdir -p "$store"
placed0=$(metric 'isle_decisions_total{outcome="placed"}')
printf '{"job_id": 900001, "line": "isle: tp=8 pp=1 dp=1 nod' >"$store/job_900001.json.new"
printf '{"job_id": 900002, "line": "isle: tp=8 pp=1", "placement": {"tp_groups": 1,' >"$store/job_900002.json"
want 'isle_decision_records{state="partial"}' 1
want 'isle_decision_records{state="unreadable"}' 1
want 'isle_exporter_source_up{source="store"}' 1
rm -f "$store/job_900001.json.new" "$store/job_900002.json"
(
	for i in $(seq 900100 900299); do
		f=$store/job_$i.json
		printf '{"job_id": %d, "line": "isle: tp=4 pp=1 dp=1", ' "$i" >"$f.new"
		printf '"placement": {"tp_groups": 1, "tp_in_island": 1, "cost_ratio": 1.0}}' >>"$f.new"
		mv "$f.new" "$f"
	done
) &
writer_pid=$!
n=0
while kill -0 "$writer_pid" 2>/dev/null; do
	scrape_ok || fail "scrape failed while the store was written"
	n=$((n + 1))
done
wait "$writer_pid"
writer_pid=""
want 'isle_decisions_total{outcome="placed"}' $((placed0 + 200))
want 'isle_decision_records{state="partial"}' 0
want 'isle_decision_records{state="unreadable"}' 0
echo "store: 200 records written during $n scrapes, each counted once"
rm -f "$store"/job_9001[0-9][0-9].json "$store"/job_9002[0-9][0-9].json
want 'isle_decisions_total{outcome="placed"}' $((placed0 + 200))
alive
echo PASS
