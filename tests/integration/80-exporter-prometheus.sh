#!/bin/bash
# 80-exporter-prometheus: isle-exporter scraped by a real Prometheus (Debian's
# prometheus, loopback, a private config and data dir, a random port) next
# to a live topology/isle test cluster (8 nodes x 4 GPUs, NVLink domains
# nvl1 = n[01-04], nvl2 = n[05-08]).
#  1. Prometheus scrapes the exporter (OpenMetrics: the target is up with no
#     scrape error); the exporter answers Prometheus's Accept header with
#     application/openmetrics-text and "# EOF", anything else with text
#     0.0.4, which `promtool check metrics` passes.
#  2. Through Prometheus's HTTP API: a 2-node TP=8 job takes one 16-GPU
#     island: free whole islands go 2 -> 1, allocated GPUs 0 -> 8, placed
#     decisions and TP groups placed go up by one and fragmentation above
#     0; when the job ends islands and GPUs come back, fragmentation is 0
#     and the counters keep their values.
#  3. monitoring/isle-rules.yml passes `promtool check rules` and `promtool
#     test rules` (monitoring/isle-rules.test.yml), and Prometheus loads it:
#     every rule healthy, the recording rules have values.
#  4. monitoring/grafana-isle.json: every metric name its queries use is
#     served by the exporter, and every query runs in Prometheus with a
#     result.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$repo/slurm_plugin/testlib.sh"
isle_pt_setup
exporter=$repo/build/bin/isle-exporter
[ -x "$exporter" ] || { echo "SKIP: $exporter not built (make)"; exit 77; }
for t in prometheus promtool curl jq; do
	command -v "$t" >/dev/null || { echo "SKIP: $t not installed (scripts/deps.sh)"; exit 77; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-t80.XXXXXX")
exp_pid="" prom_pid=""
cleanup() {
	[ -z "$exp_pid" ] || kill "$exp_pid" 2>/dev/null || true
	[ -z "$prom_pid" ] || kill "$prom_pid" 2>/dev/null || true
	[ -z "$exp_pid" ] || wait "$exp_pid" 2>/dev/null || true
	[ -z "$prom_pid" ] || wait "$prom_pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

isle_pt_gb200 "$work" 8 4 8
isle_pt_plugstack "$work" default_mode=preferred
isle_cluster_start --nodes 8 --gpus 4 --topology isle \
	--plugin-dir "$repo/build/slurm" --plugstack "$work/plugstack.conf" \
	--etc-file "$work/isle.json" || fail "cluster did not start"

# --- the exporter and Prometheus ---------------------------------------------
# An empty reports directory: the shim's series are served (at 0); test 82
# runs jobs with the shim.
"$exporter" --listen 127.0.0.1:0 --port-file "$work/exp.port" --ttl 1 \
	--reports-dir "$work/reports" 2>"$work/exporter.log" &
exp_pid=$!
wait_for 20 test -s "$work/exp.port" || fail "exporter did not start: $(cat "$work/exporter.log")"
eport=$(cat "$work/exp.port")
url=http://127.0.0.1:$eport/metrics
wait_for 30 curl -sf -o /dev/null "$url" || fail "exporter does not serve $url"

mkdir -p "$work/prom"
cat >"$work/prom.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $repo/monitoring/isle-rules.yml
scrape_configs:
  - job_name: isle
    static_configs:
      - targets: ['127.0.0.1:$eport']
EOF
promtool check config "$work/prom.yml" >/dev/null || fail "promtool check config"
for try in 1 2 3; do
	pport=$(isle__pick_ports 1)
	prometheus --config.file="$work/prom.yml" --storage.tsdb.path="$work/prom" \
		--web.listen-address="127.0.0.1:$pport" >"$work/prom.log" 2>&1 &
	prom_pid=$!
	if wait_for 30 curl -sf -o /dev/null "http://127.0.0.1:$pport/-/ready"; then
		break
	fi
	kill "$prom_pid" 2>/dev/null || true
	wait "$prom_pid" 2>/dev/null || true
	prom_pid=""
	[ "$try" -lt 3 ] || fail "prometheus did not start: $(tail -5 "$work/prom.log")"
done
api=http://127.0.0.1:$pport/api/v1

# One value of an instant query ("" if none).
pq() {
	curl -sf -G --data-urlencode "query=$1" "$api/query" | jq -r '.data.result[0].value[1] // empty'
}
# Waits until query $1 gives $2.
pq_is() {
	[ "$(pq "$1")" = "$2" ]
}
pq_has() {
	[ -n "$(pq "$1")" ]
}
want_some() { # query: waits for a non-empty result
	wait_for 30 pq_has "$1" || fail "Prometheus: no result for $1"
}
want() { # query value timeout
	wait_for "${3:-30}" pq_is "$1" "$2" ||
		fail "Prometheus: $1 = '$(pq "$1")', expected $2; exporter log: $(tail -3 "$work/exporter.log")"
}

# --- 1. the scrape ------------------------------------------------------------
want 'up{job="isle"}' 1
health=$(curl -sf "$api/targets" | jq -r '.data.activeTargets[] | select(.labels.job == "isle") | "\(.health) \(.lastError)"')
[ "$health" = "up " ] || fail "target: $health"
om_accept='application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'
ctype=$(curl -sf -o "$work/om.txt" -w '%{content_type}' -H "Accept: $om_accept" "$url")
[[ $ctype == "application/openmetrics-text; version=1.0.0"* ]] || fail "content type for Prometheus: $ctype"
[ "$(tail -1 "$work/om.txt")" = "# EOF" ] || fail "OpenMetrics scrape does not end in # EOF"
ctype=$(curl -sf -o "$work/text.txt" -w '%{content_type}' "$url")
[[ $ctype == "text/plain; version=0.0.4"* ]] || fail "content type without Accept: $ctype"
promtool check metrics <"$work/text.txt" || fail "promtool check metrics"
echo "promtool check metrics: OK ($(grep -vc '^#' "$work/text.txt") samples)"

# --- 2. series follow a job -------------------------------------------------
want 'isle_islands_free{island_gpus="16"}' 2
want 'isle_gpus{state="allocated"}' 0
want 'isle_fragmentation_ratio' 0
placed0=$(pq 'isle_decisions_total{outcome="placed"}')
groups0=$(pq 'isle_tp_groups_placed_total')
if [ -z "$placed0" ] || [ -z "$groups0" ]; then fail "no decision counters in Prometheus"; fi

j=$(sbatch --parsable -N2 --gpus-per-node=4 --isle-tp=8 -o /dev/null --wrap "sleep 300")
isle_pt_wait_state "$j" RUNNING 60 || fail "job $j did not start"
want 'isle_islands_free{island_gpus="16"}' 1
want 'isle_gpus{state="allocated"}' 8
want 'isle_decisions_total{outcome="placed"}' $((placed0 + 1))
want 'isle_tp_groups_placed_total' $((groups0 + 1))
want 'isle_tp_groups_split_total' 0
want_some 'isle_fragmentation_ratio > 0'
echo "job $j running: free islands $(pq 'isle_islands_free{island_gpus="16"}'), fragmentation $(pq isle_fragmentation_ratio)"

scancel "$j"
isle_wait_job "$j" 60 >/dev/null || true
want 'isle_islands_free{island_gpus="16"}' 2
want 'isle_gpus{state="allocated"}' 0
want 'isle_gpus{state="free"}' 32
want 'isle_fragmentation_ratio' 0
[ "$(pq 'isle_decisions_total{outcome="placed"}')" = $((placed0 + 1)) ] || fail "placed decisions changed after the job ended"
# Prometheus saw the counter rise, never fall.
[ "$(pq 'resets(isle_decisions_total{outcome="placed"}[5m])')" = 0 ] || fail "decisions counter reset"
[ "$(pq 'increase(isle_decisions_total{outcome="placed"}[5m]) > 0')" != "" ] || fail "no increase of placed decisions"
want_some 'isle_eval_duration_seconds_count > 0'
# The histogram: +Inf is the count; the plugin's fixed bounds are there.
want_some 'isle_eval_duration_seconds_bucket{le="+Inf"} == on() isle_eval_duration_seconds_count'
want 'count(isle_eval_duration_seconds_bucket)' 14
want 'isle_fallback' 0

# --- 3. rules -----------------------------------------------------------------
promtool check rules "$repo/monitoring/isle-rules.yml" || fail "promtool check rules"
(cd "$repo/monitoring" && promtool test rules isle-rules.test.yml) || fail "promtool test rules"
bad=$(curl -sf "$api/rules" | jq -r '[.data.groups[].rules[] | select(.health != "ok") | .name] | join(" ")')
nrules=$(curl -sf "$api/rules" | jq '[.data.groups[].rules[]] | length')
if [ "$nrules" -lt 7 ] || [ -n "$bad" ]; then fail "Prometheus rules: $nrules loaded, unhealthy: $bad"; fi
want 'isle:gpus_free:ratio' 1
want 'count(isle:decisions:rate5m)' "$(pq 'count(isle_decisions_total)')"

# --- 4. the dashboard ---------------------------------------------------------
dash=$repo/monitoring/grafana-isle.json
jq -r '.panels[].targets[].expr, (.templating.list[] | .definition // empty)' "$dash" >"$work/exprs"
[ "$(wc -l <"$work/exprs")" -ge 10 ] || fail "dashboard has $(wc -l <"$work/exprs") queries"
# A scrape taken now (jobs have run: the eval quantiles are there).
curl -sf "$url" | grep -v '^#' | sed 's/[{ ].*//' | sort -u >"$work/served"
grep -o 'isle_[a-z0-9_]*' "$work/exprs" | sort -u >"$work/used"
missing=$(comm -23 "$work/used" "$work/served" | tr '\n' ' ')
[ -z "$missing" ] || fail "dashboard uses metrics the exporter does not serve: $missing"
echo "dashboard: $(wc -l <"$work/used") metric names, all served"
while read -r q; do
	# Grafana's variables as Grafana would expand them here.
	q=${q//\$__rate_interval/1m}
	q=${q//\$instance/.+}
	[[ $q == label_values\(* ]] && q=$(echo "$q" | sed -E 's/^label_values\(([a-z_]+), *([a-z_]+)\)$/count by (\2) (\1)/')
	res=$(curl -sf -G --data-urlencode "query=$q" "$api/query") || fail "Prometheus refused dashboard query: $q"
	[ "$(echo "$res" | jq -r .status)" = success ] || fail "dashboard query failed: $q"
	[ "$(echo "$res" | jq '.data.result | length')" -gt 0 ] || fail "dashboard query has no result: $q"
done <"$work/exprs"
echo "dashboard: $(wc -l <"$work/exprs") queries run with results"
echo PASS
