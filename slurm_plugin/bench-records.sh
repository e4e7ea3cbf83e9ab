#!/bin/bash
# bench-records.sh PLUGIN_DIR [NJOBS] [WINDOW_S]: file operations of
# topology/isle's decision records on the test cluster (8 nodes x 4 GPUs).
#  A. Pending churn: all GPUs held by two jobs (30 min limit), 10
#     required-mode TP=8 jobs pending (main scheduler: "waiting", backfill:
#     "planned"); for
#     WINDOW_S seconds strace counts slurmctld's renames into
#     StateSaveLocation/isle/ (one per record write), and the log counts
#     backfill cycles (DebugFlags=Backfill, bf_interval=5).
#  B. NJOBS one-GPU jobs (separate sbatch --wrap true) with MinJobAge=2;
#     after they all finished and Slurm purged them: files and bytes left in
#     StateSaveLocation/isle/, and renames per job.
# PLUGIN_DIR holds the topology_isle.so / spank_isle.so to measure (the
# repository's build/slurm, or another checkout's for a before/after).
# Prints one line per measurement. Not a test: the numbers depend on timing.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$repo/slurm_plugin/testlib.sh"
isle_cluster_require

plugins=$(cd "${1:?usage: bench-records.sh PLUGIN_DIR [NJOBS] [WINDOW_S]}" && pwd)
njobs=${2:-1000}
window=${3:-60}
ISLE_PT_PLUGINS=$plugins
command -v strace >/dev/null || { echo "SKIP: strace not installed"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-bench-rec.XXXXXX")
trap 'rm -rf "$work"' EXIT
isle_pt_gb200 "$work" 8 4 4
isle_pt_plugstack "$work" default_mode=preferred
isle_cluster_start --nodes 8 --gpus 4 --topology isle \
	--plugin-dir "$plugins" --plugstack "$work/plugstack.conf" \
	--etc-file "$work/isle.json" \
	--slurm-extra "MinJobAge=2
DebugFlags=Backfill
SchedulerParameters=bf_interval=5" >/dev/null
log=$ISLE_CLUSTER_DIR/log/slurmctld.log
rec=$ISLE_CLUSTER_DIR/state/isle
pid=$(cat "$ISLE_CLUSTER_DIR/run/slurmctld.pid")

# renames into the record directory in an strace output file
renames() { grep -c "rename(\"$rec/job_" "$1" || true; }

# --- A. pending churn --------------------------------------------------------
hold=()
for _ in 1 2; do
	hold+=("$(sbatch --parsable -t 30 -N4 --gpus-per-node=4 -o /dev/null --wrap 'sleep 900')")
done
for j in "${hold[@]}"; do
	for _ in $(seq 1 240); do
		[ "$(squeue -h -j "$j" -o %T)" = RUNNING ] && break
		sleep 0.5
	done
done
pend=()
for _ in $(seq 1 10); do
	pend+=("$(sbatch --parsable -t 5 -N2 --gpus-per-node=4 --isle-tp=8 --isle-mode=required -o /dev/null --wrap true)")
done
sleep 5 # the submissions' own tests are not part of the window
off=$(stat -c %s "$log")
timeout "$window" strace -f -q -e trace=rename -o "$work/a.strace" -p "$pid" || true
cycles=$(tail -c +"$((off + 1))" "$log" | grep -c "backfill.*beginning" || true)
w=$(renames "$work/a.strace")
echo "pending churn: $w record writes in ${window}s with 10 pending jobs, $cycles backfill cycles" \
	"($(awk -v w="$w" -v c="$cycles" 'BEGIN { printf "%.1f", c ? w / c : w }') writes per cycle)"
scancel "${hold[@]}" "${pend[@]}"
for _ in $(seq 1 600); do
	[ -z "$(squeue -h -o %i)" ] && break
	sleep 0.5
done

# --- B. NJOBS short jobs -----------------------------------------------------
start=$SECONDS
strace -f -q -e trace=rename -o "$work/b.strace" -p "$pid" &
spid=$!
sleep 1
seq 1 "$njobs" | xargs -P 4 -I{} sbatch --parsable -t 5 -N1 --gpus-per-node=1 -o /dev/null --wrap true >/dev/null
for _ in $(seq 1 7200); do
	[ -z "$(squeue -h -o %i)" ] && break
	sleep 0.5
done
ran=$((SECONDS - start))
peak=$(find "$rec" -name 'job_*' 2>/dev/null | wc -l)
# Slurm purges finished jobs (MinJobAge=2) on its purge pass, about once a
# minute; the writer then drops their records.
for _ in $(seq 1 360); do
	[ -z "$(scontrol show job 2>/dev/null | grep JobId=)" ] && break
	sleep 0.5
done
sleep 5
kill "$spid" 2>/dev/null || true
wait "$spid" 2>/dev/null || true
files=$(find "$rec" -name 'job_*' 2>/dev/null | wc -l)
bytes=$(du -sb "$rec" 2>/dev/null | cut -f1)
w=$(renames "$work/b.strace")
echo "$njobs jobs in ${ran}s: $w record writes ($(awk -v w="$w" -v n="$njobs" 'BEGIN { printf "%.2f", w / n }') per job);" \
	"record files: $peak when the queue emptied, $files (${bytes:-0} bytes in $rec) after Slurm purged the jobs"
