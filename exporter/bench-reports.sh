#!/bin/bash
# exporter/bench-reports.sh BUILD OUT.json: isle-exporter's reports source
# with 100,000 shim reports and 1,000 unreadable files arriving at once
# (make bench-exporter-reports).
#
# Inputs, generated: REPORTS copies of a report as isle_report_write writes
# it (tests/golden/proto/report-good.json) as job_<id>.json, and 1,000
# garbage files; the two scontrol outputs are replayed from small files.
# Measured, from the exporter's own metrics, scraped every 0.5 s until
# every report is counted: each refresh's read of the directory
# (isle_exporter_source_duration_seconds{source="reports"}; at most 5,000
# new files are read a refresh), the number of refreshes the backlog took,
# the scrape's time (curl time_total, every scrape checked whole) while it
# drained, a refresh once nothing is new, and the host's load average
# (this host is shared). Goals, fixed before the data:
# a refresh's read of the directory <= 1 s while the backlog drains, and
# the scrape median <= 50 ms meanwhile.
set -euo pipefail
B=${1:-build}
out=${2:-$B/bench/exporter-reports.json}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
exporter=$repo/$B/bin/isle-exporter
REPORTS=${BENCH_REPORTS:-100000}
BAD=1000
mkdir -p "$(dirname "$out")"
work=$(mktemp -d "${TMPDIR:-/tmp}/isle-bench-reports.XXXXXX")
pid=""
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT

mkdir "$work/reports"
awk -v n="$REPORTS" -v bad="$BAD" -v dir="$work/reports" -v src="$repo/tests/golden/proto/report-good.json" '
BEGIN {
	while ((getline l <src) > 0) text = text l "\n"
	for (j = 1; j <= n; j++) { f = dir "/job_" j ".json"; printf "%s", text >f; close(f) }
	for (j = 1; j <= bad; j++) { f = dir "/job_" (n + j) ".json"; print "garbage" >f; close(f) }
}'
printf 'Topology=isle Cluster=b File=/x Status=ok GPUs=4 FreeGPUs=4\nIslandName=a GPUs=4 FreeGPUs=4\n' >"$work/topology.txt"
echo '{"nodes": []}' >"$work/nodes.json"

"$exporter" --listen 127.0.0.1:0 --port-file "$work/port" --ttl 0.5 --state-dir "$work/state" \
	--reports-dir "$work/reports" --topology-from "$work/topology.txt" --nodes-from "$work/nodes.json" \
	2>"$work/exp.log" &
pid=$!
for _ in $(seq 1 600); do [ -s "$work/port" ] && break; sleep 0.1; done
url=http://127.0.0.1:$(cat "$work/port")/metrics
accept='application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'
: >"$work/refresh"
: >"$work/times"
last_ts="" done_=0
for _ in $(seq 1 2400); do
	t=$(curl -sf -H "Accept: $accept" -o "$work/s.txt" -w '%{time_total}' "$url") || { sleep 0.5; continue; }
	[ "$(tail -1 "$work/s.txt")" = "# EOF" ] || { echo "bench-reports: an incomplete scrape" >&2; exit 1; }
	echo "$t" >>"$work/times"
	# One sample per refresh: the source's last success time changes.
	ts=$(awk '/^isle_exporter_source_last_success_timestamp_seconds\{source="reports"\}/ { print $2 }' "$work/s.txt")
	if [ -n "$ts" ] && [ "$ts" != "$last_ts" ] && [ "$ts" != 0 ]; then
		last_ts=$ts
		awk '/^isle_exporter_source_duration_seconds\{source="reports"\}/ { print $2 }' "$work/s.txt" >>"$work/refresh"
	fi
	n=$(awk '/^isle_shim_jobs_reported_total / { print $2 }' "$work/s.txt")
	if [ "${n:-0}" = "$REPORTS" ]; then done_=1; break; fi
	sleep 0.5
done
[ $done_ = 1 ] || { echo "bench-reports: not every report counted: ${n:-none}" >&2; exit 1; }
grep -q "^isle_shim_report_errors_total $BAD$" "$work/s.txt" || { echo "bench-reports: bad files not counted" >&2; exit 1; }
grep -q "^isle_shim_allreduce_calls_total{path=\"taken\",size_min_bytes=\"65536\"} $((5 * REPORTS))$" "$work/s.txt" ||
	{ echo "bench-reports: the counts are not the reports' sum" >&2; exit 1; }
sleep 2
idle_refresh=$(curl -sf "$url" | awk '/^isle_exporter_source_duration_seconds\{source="reports"\}/ { print $2 }')
kill "$pid"
wait "$pid" 2>/dev/null || true
pid=""

# Quantiles by rank (nearest rank, at least the first).
q() { sort -n "$1" | awk -v k="$2" 'function at(p, i) { i = int(p * NR + 0.999999); return v[i < 1 ? 1 : i] }
	{ v[NR] = $1 * k } END {
	printf "{\"median\": %.4f, \"p10\": %.4f, \"p90\": %.4f, \"max\": %.4f, \"n\": %d}",
		at(0.5), at(0.1), at(0.9), v[NR], NR }'; }
refresh=$(q "$work/refresh" 1)
scrape=$(q "$work/times" 1000)
jq -n --arg commit "$(git -C "$repo" describe --dirty --always)" --argjson reports "$REPORTS" \
	--argjson bad "$BAD" --argjson refresh "$refresh" --argjson scrape "$scrape" \
	--argjson idle "$idle_refresh" --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" \
	'{commit: $commit, reports: $reports, unreadable_files: $bad,
	  refresh_reports_s: $refresh, scrape_ms: $scrape, refresh_reports_s_nothing_new: $idle,
	  loadavg_after: $load,
	  goal_refresh_max_s: 1, goal_scrape_median_ms: 50,
	  goal_met: ($refresh.max <= 1 and $scrape.median <= 50)}' | tee "$out"
