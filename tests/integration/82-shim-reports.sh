#!/bin/bash
# 82-shim-reports: the shim's per-job report from a real job to Prometheus and
# `islectl explain` (docs/exporter.md, "The shim's reports"), and jobs that
# tamper with theirs (docs/security.md). A live 2-node topology/isle test
# cluster (4 fake GPUs a node, one NVLink domain), spank_isle.so with
# shim= and reports=, isle-exporter --reports-dir, Debian's Prometheus:
#  1. An MPICH job of 2 nodes x 2 ranks under `srun --mpi=pmi2`, the shim
#     injected by SPANK (the hierarchy from 1 KiB on): once it has ended its
#     report is in the reports directory (root's, 0644), and through
#     Prometheus's HTTP API isle_shim_jobs_reported_total goes 0 -> 1 and
#     the allreduce calls and bytes sent per tier equal the stored report's
#     (read by proto's reader, build/tests/report_dump).
#  2. `islectl explain JOB --reports DIR` shows the placement and the shim
#     report beside it; a job without a report says so, exit 0.
#  3. Jobs that replace their report before the epilog: a symlink to a
#     valid report elsewhere, a FIFO, a 1 MiB file, garbage, a report dir
#     that is a symlink. For each: the job ends, the node stays up (no
#     epilog hang or failure), nothing is stored for it, and slurmd's log
#     names the file and why ("isle: job N: shim report not collected:
#     ...: a symbolic link, not followed").
#  4. Garbage, a symlink and an oversized file put straight into the
#     reports directory: the exporter keeps serving, skips them and counts
#     them (isle_shim_report_errors_total 3), the job count unchanged.
# The jobs run as root (the test cluster's user): the owner check of
# isle_report_collect against another uid is test_proto_rundir's.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$repo/slurm_plugin/testlib.sh"
isle_pt_setup

exporter=$repo/build/bin/isle-exporter
islectl=$repo/build/bin/islectl
agent=$repo/build/bin/isle-agent
dump=$repo/build/tests/report_dump
CHECK_MPICH=$repo/build/tests/comm_mpi_check_mpich
command -v mpicc.mpich >/dev/null ||
	{ echo "SKIP: no MPICH (mpicc.mpich): its shim backend is not made here (libmpich-dev)"; exit 77; }
[ -e "$ISLE_SLURM_PREFIX/lib/slurm/mpi_pmi2.so" ] || { echo "SKIP: Slurm without mpi_pmi2.so"; exit 77; }
for t in prometheus promtool curl jq; do
	command -v "$t" >/dev/null || { echo "SKIP: $t not installed (scripts/deps.sh)"; exit 77; }
done
for f in "$exporter" "$islectl" "$agent" "$dump" "$CHECK_MPICH" "$repo/build/lib/libisle_preload.so" \
	"$repo/build/lib/libisle_mpi_mpich.so"; do
	[ -e "$f" ] || fail "$f not built (make)"
done

work=$(mktemp -d "${ISLE_TMPDIR:-${TMPDIR:-/tmp}}/isle-t82.XXXXXX")
chmod 0755 "$work"
exp_pid="" prom_pid=""
cleanup() {
	[ -z "$exp_pid" ] || kill "$exp_pid" 2>/dev/null || true
	[ -z "$prom_pid" ] || kill "$prom_pid" 2>/dev/null || true
	[ -z "$exp_pid" ] || wait "$exp_pid" 2>/dev/null || true
	[ -z "$prom_pid" ] || wait "$prom_pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
reports=$work/reports

isle_pt_gb200 "$work" 2 2 2
isle_pt_plugstack "$work" "agent=$agent cluster=@ETC@/isle.json rundir=@DIR@/run/isle/%n" \
	"shim=$repo/build/lib/libisle_preload.so reports=$reports reports_keep=100"
isle_cluster_start --nodes 2 --gpus 4 --topology isle --plugin-dir "$repo/build/slurm" \
	--plugstack "$work/plugstack.conf" --etc-file "$work/isle.json" || fail "cluster did not start"
d=$ISLE_CLUSTER_DIR
jobs=$d/jobs

# --- the exporter and Prometheus ---------------------------------------------
"$exporter" --listen 127.0.0.1:0 --port-file "$work/exp.port" --ttl 1 \
	--reports-dir "$reports" 2>"$work/exporter.log" &
exp_pid=$!
wait_for 20 test -s "$work/exp.port" || fail "exporter did not start: $(cat "$work/exporter.log")"
url=http://127.0.0.1:$(cat "$work/exp.port")/metrics
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
      - targets: ['127.0.0.1:$(cat "$work/exp.port")']
EOF
for try in 1 2 3; do
	pport=$(isle__pick_ports 1)
	prometheus --config.file="$work/prom.yml" --storage.tsdb.path="$work/prom" \
		--web.listen-address="127.0.0.1:$pport" >"$work/prom.log" 2>&1 &
	prom_pid=$!
	wait_for 30 curl -sf -o /dev/null "http://127.0.0.1:$pport/-/ready" && break
	kill "$prom_pid" 2>/dev/null || true
	wait "$prom_pid" 2>/dev/null || true
	prom_pid=""
	[ "$try" -lt 3 ] || fail "prometheus did not start: $(tail -5 "$work/prom.log")"
done
api=http://127.0.0.1:$pport/api/v1
pq() {
	curl -sf -G --data-urlencode "query=$1" "$api/query" | jq -r '.data.result[0].value[1] // empty'
}
pq_is() { [ "$(pq "$1")" = "$2" ]; }
want() { # query value: waits for it
	wait_for 30 pq_is "$1" "$2" ||
		fail "Prometheus: $1 = '$(pq "$1")', expected $2; exporter log: $(tail -3 "$work/exporter.log")"
}
want 'isle_exporter_source_up{source="reports"}' 1
want 'isle_shim_jobs_reported_total' 0

# --- 1. a job with the shim, in two steps -------------------------------------
# Each step's shim writes its own report (step_<id>.json); the epilog
# stores their sum, checked against what each step's rank 0 printed
# (ISLE_REPORT=1).
cat >"$jobs/good.sh" <<EOF
#!/bin/bash
unset LD_PRELOAD ISLE_COMM_CODEC ISLE_COMM_ALGO ISLE_COMM_DISABLE ISLE_REPORT_FILE
export ISLE_COMM_TIMEOUT_S=60 ISLE_COMM_VERBOSE=1 ISLE_REPORT=1
# step OUT SIZES. A loaded 2-core host now and then fails a task launch
# before any of isle's code ran (see 44-comm-preload-spank.sh): launch
# again then.
step() {
	for try in 1 2 3; do
		# The hierarchy from 1 KiB on: calls taken and bytes per tier, as in 67.
		timeout 150 srun --kill-on-bad-exit=1 --mpi=pmi2 env ISLE_COMM_CODEC=none \\
			ISLE_COMM_ALGO=hier ISLE_COMM_MIN_BYTES=1K \\
			$CHECK_MPICH exact --sizes \$2 >\$1 2>&1
		rc=\$?
		[ \$rc = 0 ] && break
		grep -Eq 'task [0-9]+ launch failed' \$1 || break
		grep -Eq '^(isle_comm|exact|isle:)' \$1 && break
	done
	return \$rc
}
step $jobs/good.out 1,1000,100000 && step $jobs/good2.out 1,100000
echo \$? >$jobs/good.rc
EOF
chmod +x "$jobs/good.sh"
good=$(sbatch --parsable -N2 --gpus-per-node=2 --ntasks-per-node=2 --isle-tp=2 \
	--chdir="$jobs" -o "$jobs/good.job.out" "$jobs/good.sh") || fail "sbatch failed"
isle_wait_job "$good" 600 >/dev/null || fail "job $good did not finish: $(tail -20 "$jobs/good.out" 2>/dev/null)"
for o in good good2; do
	[ "$(cat "$jobs/good.rc" 2>/dev/null)" = 0 ] && grep -q '^exact: PASS' "$jobs/$o.out" &&
		grep -q '^isle_comm: 4 ranks, plan .*, MPICH backend' "$jobs/$o.out" ||
		fail "the shim job did not pass with the shim engaged: $(tail -20 "$jobs/$o.out" "$jobs/good.job.out" 2>/dev/null)"
done
# What the two steps' rank 0 said: calls taken and passed, summed.
step_taken=$(sed -n 's/^isle_report: mpi, 4 ranks: \([0-9]*\) allreduce taken, .*/\1/p' "$jobs/good.out" "$jobs/good2.out" |
	awk '{ s += $1; n++ } END { print (n == 2 ? s : "") }')
step_calls=$(sed -n 's/^isle_report: mpi, 4 ranks: \([0-9]*\) allreduce taken, \([0-9]*\) passed through.*/\1 \2/p' \
	"$jobs/good.out" "$jobs/good2.out" | awk '{ s += $1 + $2; n++ } END { print (n == 2 ? s : "") }')
[ -n "$step_taken" ] && [ -n "$step_calls" ] ||
	fail "each step should print one isle_report line: $(grep -h '^isle_report' "$jobs/good.out" "$jobs/good2.out")"
stored=$reports/job_$good.json
wait_for 30 test -s "$stored" || fail "no report stored for job $good in $reports: $(ls -la "$reports" 2>&1)"
[ "$(stat -c '%U %a' "$stored")" = "root 644" ] || fail "$stored: $(stat -c '%U %a' "$stored"), expected root 644"
[ "$(stat -c '%U %a' "$reports")" = "root 755" ] || fail "$reports: $(stat -c '%U %a' "$reports")"
"$dump" "$stored" >"$work/dump" || fail "the stored report does not read: $(cat "$work/dump")"
grep -q '^ranks 4$' "$work/dump" || fail "stored report: $(head -3 "$work/dump")"
calls=$(awk '$1 == "class" { s += $4 + $6 } END { print s + 0 }' "$work/dump")
taken=$(awk '$1 == "class" { s += $4 } END { print s + 0 }' "$work/dump")
sent=$(awk '$1 == "tier" { s += $4 } END { print s + 0 }' "$work/dump")
library=$(awk '$1 == "tier" { s += $6 } END { print s + 0 }' "$work/dump")
[ "$taken" -gt 0 ] && [ "$calls" -gt "$taken" ] && [ "$sent" -gt 0 ] && [ "$library" -gt 0 ] ||
	fail "the report should count calls taken and passed and bytes per tier: $(cat "$work/dump")"
[ "$taken" = "$step_taken" ] && [ "$calls" = "$step_calls" ] ||
	fail "stored report: $calls calls ($taken taken), the two steps said $step_calls ($step_taken taken)"
echo "job $good: report of 2 steps stored: $calls allreduce ($taken taken), $sent B sent, a ring $library B"
# The run directory and the report in it went with the job.
for n in $(isle_pt_job_nodes "$good" 2>/dev/null || true); do
	[ ! -e "$d/run/isle/$n/$good" ] || fail "$d/run/isle/$n/$good left behind"
done
want 'isle_shim_jobs_reported_total' 1
want 'sum(isle_shim_allreduce_calls_total)' "$calls"
want 'sum(isle_shim_allreduce_calls_total{path="taken"})' "$taken"
want 'sum(isle_shim_sent_bytes_total)' "$sent"
want 'sum(isle_shim_library_bytes_total)' "$library"
[ "$(pq 'increase(isle_shim_jobs_reported_total[2m]) > 0')" != "" ] || fail "no increase of jobs reported"
want 'isle_shim_report_errors_total' 0
curl -sf "$url" | promtool check metrics || fail "promtool check metrics"

# --- 2. islectl explain -------------------------------------------------------
statedir=$(scontrol show config | awk '/^StateSaveLocation/ { print $3 }')
"$islectl" explain --state-dir "$statedir" --reports "$reports" "$good" >"$work/explain" 2>&1 ||
	fail "islectl explain $good: $(cat "$work/explain")"
grep -q "^Job $good: isle: " "$work/explain" && grep -q "^Shim:       mpi, 4 ranks (report $stored)" "$work/explain" ||
	fail "explain does not show placement and report: $(cat "$work/explain")"
echo "explain: $(grep -m1 '^Shim:' "$work/explain")"
"$islectl" explain --json --state-dir "$statedir" --reports "$reports" "$good" >"$work/explain.json" 2>&1 ||
	fail "islectl explain --json $good: $(cat "$work/explain.json")"
[ "$(jq -r '.shim_report.ranks' "$work/explain.json")" = 4 ] &&
	[ "$(jq '[.shim_report.calls[] | .taken + .passed] | add' "$work/explain.json")" = "$calls" ] ||
	fail "explain --json: no shim_report with $calls calls: $(jq -c '.shim_report, .shim_report_error' "$work/explain.json")"

# --- 3. jobs that tamper with their report -----------------------------------
cp "$stored" "$work/forged.json"
# hostile NAME WHAT: a 1-node job whose batch script puts WHAT where the
# shim's report goes ($R), as a job could once its steps are done; sets hj.
hostile() {
	local name=$1 what=$2
	cat >"$jobs/$name.sh" <<EOF
#!/bin/bash
R=$d/run/isle/\$SLURMD_NODENAME/\$SLURM_JOB_ID/report/step_0.json
[ -d "\$(dirname "\$R")" ] || { echo "no report dir"; exit 1; }
$what
ls -la "\$(dirname "\$R")"
EOF
	chmod +x "$jobs/$name.sh"
	hj=$(sbatch --parsable -N1 --gpus-per-node=2 --chdir="$jobs" -o "$jobs/$name.out" "$jobs/$name.sh") ||
		fail "sbatch $name failed"
	isle_wait_job "$hj" 120 >/dev/null || fail "job $name ($hj) did not finish: the epilog hung?"
	if grep -q 'no report dir' "$jobs/$name.out"; then fail "job $name: no report directory: $(cat "$jobs/$name.out")"; fi
}
declare -A why=(
	[link]='a symbolic link, not followed'
	[fifo]='not a regular file'
	[huge]='more than 65536'
	[garbage]='step_0.json: not JSON'
	[dirlink]='report: not a directory'
)
declare -A cmd=(
	[link]="ln -s $work/forged.json \"\$R\""
	[fifo]="mkfifo \"\$R\""
	[huge]="head -c 1048576 /dev/urandom | base64 -w0 >\"\$R\""
	[garbage]="printf '{\"isle_report\": 1, \"api\": \"mpi\"' >\"\$R\""
	[dirlink]="D=\$(dirname \"\$R\"); rmdir \"\$D\" && ln -s $reports \"\$D\""
)
for name in link fifo huge garbage dirlink; do
	hostile "$name" "${cmd[$name]}"
	j=$hj
	[ ! -e "$reports/job_$j.json" ] || fail "job $name ($j): a tampered report was stored"
	wait_for 30 grep -hq "isle: job $j: shim report not collected: .*${why[$name]}" "$d"/log/slurmd-*.log ||
		fail "job $name ($j): no clear error in slurmd's log: $(grep -h "job $j" "$d"/log/slurmd-*.log | tail -3)"
	echo "job $name ($j): refused: $(grep -ho "isle: job $j: shim report not collected: .*" "$d"/log/slurmd-*.log | head -1)"
done
for n in $(scontrol show hostnames "$(sinfo -h -o %N)"); do
	st=$(scontrol -o show node "$n" | grep -o 'State=[^ ]*')
	case $st in *DRAIN* | *DOWN* | *FAIL*) fail "node $n: $st after the tampering jobs" ;; esac
done
others=$(find "$reports" -mindepth 1 ! -name "job_$good.json")
[ -z "$others" ] || fail "other files in $reports: $others"
# A job without a report: explain says so, exit 0.
"$islectl" explain --state-dir "$statedir" --reports "$reports" "$j" >"$work/explain2" 2>&1 ||
	fail "islectl explain $j: $(cat "$work/explain2")"
grep -q "^Shim:       no report for job $j in $reports" "$work/explain2" ||
	fail "explain of a job without a report: $(cat "$work/explain2")"
want 'isle_shim_jobs_reported_total' 1

# --- 4. garbage in the reports directory --------------------------------------
echo 'not a report' >"$reports/job_900001.json"
ln -s "$stored" "$reports/job_900002.json"
head -c 200000 /dev/zero | tr '\0' ' ' >"$reports/job_900003.json"
want 'isle_shim_report_errors_total' 3
want 'isle_shim_reports{state="unreadable"}' 3
want 'isle_shim_reports{state="readable"}' 1
want 'isle_shim_jobs_reported_total' 1
want 'isle_exporter_source_up{source="reports"}' 1
curl -sf "$url" | promtool check metrics || fail "promtool check metrics with garbage in the reports dir"
echo PASS
