#!/bin/bash
# exporter/bench.sh BUILD OUT.json: isle-exporter at 10,000 nodes and
# 100,000 decision records (make bench-exporter).
#
# Inputs, generated: a GB200-like cluster file (4 GPUs per node, NVLink
# domains of 18 nodes, leafs of 36 under one spine), what `scontrol show
# node --json` prints for it (each node a copy of exporter/bench-node.json,
# one node of Slurm 24.11.5's real output; 30% of nodes busy, 10% half
# busy, 5% drained), what topology/isle's `scontrol show topology` prints
# for that state, and 100,000 decision records shaped as topology/isle
# writes them. The exporter reads the two scontrol outputs from files
# (--topology-from, --nodes-from): no slurmctld of 10,000 nodes runs here.
#
# Measured: the scrape (HTTP GET /metrics with Prometheus's Accept header,
# curl's time_total), 5 warm-up then 50 timed, each answer checked (ends in
# "# EOF", shows all 100,000 records); and the refresh behind it, per
# source, from the exporter's own isle_exporter_source_duration_seconds:
# the cold first scan of the store and the warm ones after it. Host CPU
# idle over the timed scrapes from /proc/stat. Goal (issue 29, fixed
# before the data): scrape median <= 50 ms.
set -euo pipefail
B=${1:-build}
out=${2:-$B/bench/exporter.json}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
exporter=$repo/$B/bin/isle-exporter
NODES=${BENCH_NODES:-10000}
RECORDS=${BENCH_RECORDS:-100000}
DOM=18 LEAF=36 WARM=5 RUNS=50

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-bench-exporter.XXXXXX")
pid=""
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT

t0=$(date +%s.%N)
# Cluster file and topology text (busy pattern: node i, 1-based).
awk -v n="$NODES" -v dom="$DOM" -v leaf="$LEAF" -v cf="$work/isle.json" \
	-v tf="$work/topology.txt" '
function used(i) { return (i % 10 < 3) ? 4 : (i % 10 == 3) ? 2 : 0 }
function usable(i) { return i % 20 != 5 }
function name(i) { return sprintf("n%05d", i) }
BEGIN {
	printf "{\"version\": 1, \"name\": \"bench-gb200\", \"nodes\": [\n" >cf
	for (i = 1; i <= n; i++)
		printf "  {\"name\": \"%s\", \"gpus\": 4, \"rack\": \"r%d\"}%s\n",
			name(i), int((i - 1) / dom) + 1, i < n ? "," : "" >cf
	nd = int((n + dom - 1) / dom)
	printf "], \"domains\": [\n" >cf
	for (d = 1; d <= nd; d++) {
		a = (d - 1) * dom + 1; b = d * dom; if (b > n) b = n
		printf "  {\"name\": \"nvl%d\", \"nodes\": [\"n[%05d-%05d]\"]}%s\n",
			d, a, b, d < nd ? "," : "" >cf
	}
	nl = int((n + leaf - 1) / leaf)
	printf "], \"switches\": [\n" >cf
	for (l = 1; l <= nl; l++) {
		a = (l - 1) * leaf + 1; b = l * leaf; if (b > n) b = n
		printf "  {\"name\": \"leaf%d\", \"level\": \"leaf\", \"nodes\": [\"n[%05d-%05d]\"]},\n",
			l, a, b >cf
	}
	printf "  {\"name\": \"spine1\", \"level\": \"spine\", \"switches\": [" >cf
	for (l = 1; l <= nl; l++)
		printf "\"leaf%d\"%s", l, l < nl ? ", " : "" >cf
	printf "]}\n]}\n" >cf
	tot = 0; fr = 0
	for (i = 1; i <= n; i++) { tot += 4; if (usable(i)) fr += 4 - used(i) }
	printf "Topology=isle Cluster=bench-gb200 File=%s Status=ok GPUs=%d FreeGPUs=%d\n", cf, tot, fr >tf
	for (d = 1; d <= nd; d++) {
		a = (d - 1) * dom + 1; b = d * dom; if (b > n) b = n
		g = 0; f = 0
		for (i = a; i <= b; i++) { g += 4; if (usable(i)) f += 4 - used(i) }
		printf "IslandName=nvl%d Type=nvlink-domain Nodes=n[%05d-%05d] GPUs=%d FreeGPUs=%d\n",
			d, a, b, g, f >tf
	}
	printf "IsleEval Calls=51200 MeanUs=350 P50Us=330 P99Us=1900 MaxUs=9800 SumUs=17920000 BucketsUs=50:0,100:0,250:9000,500:40000,1000:48000,2500:51000,5000:51100,10000:51200,25000:51200,50000:51200,100000:51200,250000:51200,1000000:51200,+Inf:51200\n" >tf
}'
# scontrol show node --json: the real node object per node.
jq -n --argjson n "$NODES" --slurpfile t "$repo/exporter/bench-node.json" '
	def used($i): if ($i % 10) < 3 then 4 elif ($i % 10) == 3 then 2 else 0 end;
	{nodes: [range(1; $n + 1) as $i | $t[0] + {
		name: ("n" + ("0000" + ($i | tostring))[-5:]),
		gres_used: ("gpu:" + (used($i) | tostring)),
		state: ((if used($i) == 4 then ["ALLOCATED"] elif used($i) > 0 then ["MIXED"] else ["IDLE"] end)
			+ (if $i % 20 == 5 then ["DRAIN"] else [] end))}]}' >"$work/nodes.json"
# Decision records as topology/isle writes them (one line of JSON).
mkdir -p "$work/state/isle"
awk -v n="$RECORDS" -v dir="$work/state/isle" 'BEGIN {
	for (j = 1; j <= n; j++) {
		f = dir "/job_" j ".json"
		a = (j * 7) % 9990 + 1
		split_ = (j % 50 == 0)
		printf "{\"job_id\":%d,\"time\":1796397155,\"cluster_file\":\"\\/etc\\/slurm\\/isle.json\",\"line\":\"isle: tp=8 pp=1 dp=1 nodes=n[%05d-%05d] islands=nvl1 leafs=1 tp_in_island=%d\\/1 cost=1.00x\",\"why\":\"nvl1 has the lowest modelled cost\",\"planned\":false,\"request\":{\"gpus\":8,\"nodes\":2,\"gpus_per_node\":4,\"tp\":8,\"pp\":1,\"mode\":\"preferred\",\"max_span\":\"core\"},\"placement\":{\"nodes\":\"n[%05d-%05d]\",\"per_node\":[{\"node\":\"n%05d\",\"gpus\":[0,1,2,3]},{\"node\":\"n%05d\",\"gpus\":[0,1,2,3]}],\"tp\":8,\"pp\":1,\"dp\":1,\"tp_groups\":1,\"tp_in_island\":%d,\"islands\":\"nvl1\",\"leafs\":1,\"span\":\"island\",\"cost\":{\"tp\":386894.87,\"pp\":0.0,\"dp\":0.0,\"total\":386894.87},\"ideal\":{\"tp\":386894.87,\"pp\":0.0,\"dp\":0.0,\"total\":386894.87},\"cost_ratio\":%s,\"frag\":0.5},\"candidates\":[{\"scope\":\"nvl1\",\"tier\":\"island\",\"feasible\":true,\"cost\":386894.87,\"frag\":0.5,\"chosen\":true,\"note\":\"best so far\"},{\"scope\":\"nvl2\",\"tier\":\"island\",\"feasible\":true,\"cost\":386894.87,\"frag\":0.6,\"chosen\":false,\"note\":\"fragmentation 0.600\"}],\"granted\":[{\"node\":\"n%05d\",\"gpus\":[0,1,2,3]},{\"node\":\"n%05d\",\"gpus\":[0,1,2,3]}]}",
			j, a, a + 1, !split_, a, a + 1, a, a + 1, !split_, split_ ? "1.8" : "1.0", a, a + 1 >f
		close(f)
	}
}'
gen_s=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
echo "bench-exporter: inputs generated in ${gen_s} s: $NODES nodes ($(du -m "$work/nodes.json" | cut -f1) MB node JSON), $RECORDS records"

# A cold --once: one refresh from nothing, rendered.
t1=$(date +%s.%N)
"$exporter" --once --cluster "$work/isle.json" --state-dir "$work/state" \
	--topology-from "$work/topology.txt" --nodes-from "$work/nodes.json" >"$work/once.txt"
once_s=$(awk -v a="$(date +%s.%N)" -v b="$t1" 'BEGIN { printf "%.3f", a - b }')
grep -q "^isle_decision_records{state=\"readable\"} $RECORDS$" "$work/once.txt" ||
	{ echo "bench-exporter: --once did not read every record" >&2; exit 1; }

"$exporter" --listen 127.0.0.1:0 --port-file "$work/port" --ttl 5 \
	--cluster "$work/isle.json" --state-dir "$work/state" \
	--topology-from "$work/topology.txt" --nodes-from "$work/nodes.json" 2>"$work/exp.log" &
pid=$!
for _ in $(seq 1 600); do [ -s "$work/port" ] && break; sleep 0.1; done
url=http://127.0.0.1:$(cat "$work/port")/metrics
accept='application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'
for _ in $(seq 1 600); do
	curl -sf -H "Accept: $accept" "$url" 2>/dev/null | grep -q "^isle_decision_records{state=\"readable\"} $RECORDS$" && break
	sleep 0.2
done
cold=$(curl -sf "$url" | awk '$1 ~ /^isle_exporter_source_duration_seconds/ { sub(/.*source="/, "", $1); sub(/".*/, "", $1); printf "%s %s\n", $1, $2 }')
# Let two refreshes run: the store scans after the first are warm.
sleep 11

scrape() { # prints time_total; fails unless the answer is whole
	local t
	t=$(curl -sf -H "Accept: $accept" -o "$work/scrape.txt" -w '%{time_total}' "$url")
	[ "$(tail -1 "$work/scrape.txt")" = "# EOF" ] &&
		grep -q "^isle_decision_records{state=\"readable\"} $RECORDS$" "$work/scrape.txt" || return 1
	echo "$t"
}
for _ in $(seq 1 $WARM); do scrape >/dev/null; done
read -r _ u1 n1 s1 i1 w1 q1 sq1 _ </proc/stat
: >"$work/times"
for _ in $(seq 1 $RUNS); do scrape >>"$work/times" || { echo "bench-exporter: a scrape was incomplete" >&2; exit 1; }; done
read -r _ u2 n2 s2 i2 w2 q2 sq2 _ </proc/stat
idle=$(awk -v i=$((i2 - i1)) -v t=$(((u2 + n2 + s2 + i2 + w2 + q2 + sq2) - (u1 + n1 + s1 + i1 + w1 + q1 + sq1))) \
	'BEGIN { printf "%.1f", (t > 0 ? 100 * i / t : 0) }')
warm=$(curl -sf "$url" | awk '$1 ~ /^isle_exporter_source_duration_seconds/ { sub(/.*source="/, "", $1); sub(/".*/, "", $1); printf "%s %s\n", $1, $2 }')
bytes=$(wc -c <"$work/scrape.txt")
kill "$pid"
wait "$pid" 2>/dev/null || true
pid=""

stats=$(sort -n "$work/times" | awk '{ v[NR] = $1 * 1000 } END {
	printf "{\"median\": %.3f, \"p10\": %.3f, \"p90\": %.3f, \"min\": %.3f, \"max\": %.3f}",
		v[int((NR + 1) / 2)], v[int(NR * 0.1) + 1], v[int(NR * 0.9)], v[1], v[NR] }')
src_json() { awk '{ printf "%s\"%s\": %.4f", (NR > 1 ? ", " : ""), $1, $2 }' <<<"$1"; }
median=$(echo "$stats" | jq .median)
met=$(awk -v m="$median" 'BEGIN { print (m <= 50) ? 1 : 0 }')
jq -n --arg commit "$(git -C "$repo" describe --dirty --always)" \
	--argjson nodes "$NODES" --argjson records "$RECORDS" \
	--argjson scrape "$stats" --argjson runs "$RUNS" --argjson warmup "$WARM" \
	--argjson bytes "$bytes" --argjson idle "$idle" \
	--argjson cold "{$(src_json "$cold")}" --argjson warm "{$(src_json "$warm")}" \
	--argjson once "$once_s" --argjson met "$met" \
	'{commit: $commit, nodes: $nodes, decision_records: $records,
	  scrape_ms: $scrape, scrape_runs: $runs, warmup: $warmup, scrape_bytes: $bytes,
	  goal_scrape_median_ms: 50, goal_met: ($met == 1),
	  refresh_s_first: $cold, refresh_s_later: $warm, once_cold_s: $once,
	  idle_cpu_pct: $idle}' | tee "$out"
