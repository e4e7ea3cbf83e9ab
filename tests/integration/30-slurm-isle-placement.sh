#!/bin/bash
# 30-slurm-isle-placement: topology/isle + spank_isle on a 16-node GB200-like
# test cluster (4 GPUs per node, NVLink domains nvl1..nvl4 of 4 nodes, leafs
# of 8 nodes under one spine).
#  1. slurmctld loads topology/isle and the cluster file; `scontrol show
#     topology` lists racks, islands and switches with total/free GPUs;
#     island and switch names work in slurm.conf hostlist functions
#     (switch{nvl2}, blockwith{n10}).
#  2. Anchor sequence: 1-node jobs hold n01 (1st node of nvl1) and n08 (4th
#     node of nvl2), n16 is drained; then five 2-node --isle-tp=8 jobs: every
#     job (one TP group of 8 GPUs) lies inside one NVLink domain and none
#     uses the drained node (topology/tree splits one: make bench-slurm).
#     A sixth job in required mode waits although 3 nodes are idle: no
#     domain has 2 free nodes left; its AdminComment and `islectl explain`
#     say it waits (or show backfill's plan for when a job ends).
#  3. `scontrol show job` carries the "isle:" line in AdminComment, merged
#     with an existing comment; `islectl explain` works on a finished job.
#  4. sbatch rejects a bad --isle-tp value with a message naming the option.
#  5. A corrupted cluster file + `scontrol reconfigure`: the controller stays
#     up, logs the file and the JSON path, falls back to default selection,
#     new jobs run and running jobs survive; restoring the file reloads it,
#     and a warning about it (a spare switch) shows in slurmctld's log.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$repo/slurm_plugin/testlib.sh"
isle_pt_setup 30

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-t30.XXXXXX")
trap 'rm -rf "$work"' EXIT
isle_pt_gb200 "$work" 16 4 8
isle_pt_plugstack "$work" default_mode=preferred

isle_cluster_start --nodes 16 --gpus 4 --topology isle \
	--plugin-dir "$repo/build/slurm" --plugstack "$work/plugstack.conf" \
	--etc-file "$work/isle.json" \
	--slurm-extra "PartitionName=isl2 Nodes=switch{nvl2} State=UP
PartitionName=withn10 Nodes=blockwith{n10} State=UP" || fail "cluster did not start"
log=$ISLE_CLUSTER_DIR/log/slurmctld.log

# --- 1. plugin loaded, topology shown ---------------------------------------
grep -q "isle: loaded .*isle.json: 16 nodes" "$log" || fail "cluster file not loaded"
topo=$(scontrol show topology)
sed -n 1,4p <<<"$topo"
for want in "Topology=isle Cluster=gb200-test" "RackName=rack1 Nodes=n\[01-08\] GPUs=32" \
	"IslandName=nvl1 Type=nvlink-domain Nodes=n\[01-04\] GPUs=16 FreeGPUs=16" \
	"SwitchName=leaf2 Level=leaf Nodes=n\[09-16\] GPUs=32" "SwitchName=spine1 Level=spine Switches=leaf\[1-2\]"; do
	echo "$topo" | isle_grep_q "$want" || fail "scontrol show topology lacks '$want'"
done
topo_n05=$(isle_pt_topo n05)
echo "$topo_n05" | isle_grep_q "IslandName=nvl2" || fail "show topology n05 lacks nvl2: $topo_n05"
scontrol show partition isl2 | isle_grep_q " Nodes=n\[05-08\]$" || fail "switch{nvl2} is not n[05-08]"
scontrol show partition withn10 | isle_grep_q " Nodes=n\[09-12\]$" || fail "blockwith{n10} is not n[09-12]"

# --- 2. anchor sequence -----------------------------------------------------
hold=()
for n in n01 n08; do
	j=$(sbatch --parsable -N1 -w "$n" --gpus-per-node=4 -o /dev/null --wrap "sleep 600")
	isle_pt_wait_state "$j" RUNNING 60 || fail "holder job on $n did not start"
	hold+=("$j")
done
free_nvl1=$(isle_pt_topo nvl1 | grep -o 'FreeGPUs=[0-9]*')
[ "$free_nvl1" = "FreeGPUs=12" ] || fail "nvl1 free GPUs after holding n01: $free_nvl1"

scontrol update nodename=n16 state=drain reason=isle-test || fail "cannot drain n16"
tp_jobs=()
for k in 1 2 3 4 5; do
	j=$(sbatch --parsable -N2 --gpus-per-node=4 --isle-tp=8 -o /dev/null --wrap "sleep 600")
	isle_pt_wait_state "$j" RUNNING 60 || fail "TP=8 job $k did not start: $(squeue -h -j "$j" -o %r)"
	tp_jobs+=("$j")
done
for j in "${tp_jobs[@]}"; do
	doms=$(isle_pt_job_nodes "$j" | while read -r n; do awk -v n="$n" '$1 == n { print $2 }' "$work/domains"; done | sort -u)
	echo "job $j: $(isle_pt_job_nodes "$j" | tr '\n' ' ') -> $(echo "$doms" | tr '\n' ' ')"
	[ "$(echo "$doms" | wc -l)" = 1 ] || fail "TP group of job $j spans domains: $doms"
	isle_pt_job_nodes "$j" | isle_grep_q -x n16 && fail "job $j runs on the drained n16"
done
j=$(sbatch --parsable -N2 --gpus-per-node=4 --isle-tp=8 --isle-mode=required -o /dev/null --wrap "sleep 600")
sleep 5
idle=$(sinfo -h -N -o "%N %t" | awk '$2 == "idle"' | sort -u | wc -l)
state=$(squeue -h -j "$j" -o %T)
echo "required-mode job $j: $state with $idle idle nodes"
[ "$state" = PENDING ] && [ "$idle" -ge 2 ] || fail "required job $j is $state ($idle idle nodes)"
ac=$(scontrol show job "$j" | grep -o 'AdminComment=.*' || true)
echo "$ac"
# The main scheduler finds no placement now; backfill may plan one for when
# a running job ends.
[[ $ac == "AdminComment=isle: waiting: no placement now"* || $ac == "AdminComment=isle: planned tp=8 "* ]] ||
	fail "pending job $j: $ac"
"$repo/build/bin/islectl" explain "$j" | isle_grep_q "^Job $j: isle: \(waiting\|planned\)" || fail "explain of pending job $j"
scancel "$j"
scontrol update nodename=n16 state=resume

# --- 3. AdminComment and explain --------------------------------------------
j=${tp_jobs[0]}
ac=$(scontrol show job "$j" | grep -o 'AdminComment=.*' || true)
echo "$ac"
[[ $ac == *"isle: tp=8 pp=1 dp=1 nodes="*"islands=nvl"*"tp_in_island=1/1"* ]] || fail "AdminComment of $j: $ac"
scancel "${tp_jobs[@]}"
for j in "${tp_jobs[@]}"; do isle_wait_job "$j" 60 >/dev/null || true; done

j=$(sbatch --parsable -N2 --gpus-per-node=4 --isle-tp=8 --hold -o /dev/null --wrap "true")
scontrol update jobid="$j" admincomment="site note"
scontrol release "$j"
isle_wait_job "$j" 60 || fail "short TP=8 job $j did not complete"
ac=$(scontrol show job "$j" | grep -o 'AdminComment=.*' || true)
[[ $ac == "AdminComment=site note | isle: tp=8 "* ]] || fail "AdminComment not merged: $ac"
out=$("$repo/build/bin/islectl" explain "$j") || fail "islectl explain $j failed"
echo "$out"
echo "$out" | isle_grep_q "^Job $j: isle: tp=8" || fail "explain lacks the decision line"
echo "$out" | isle_grep_q "^Candidates:" || fail "explain lacks candidates"
echo "$out" | isle_grep_q "^ *\* " || fail "explain marks no winner"
echo "$out" | isle_grep_q "^Why: " || fail "explain lacks why"
"$repo/build/bin/islectl" explain 999999 >/dev/null 2>&1 && fail "explain of an unknown job succeeded"

# --- 4. bad option values ---------------------------------------------------
for bad in "--isle-tp=0" "--isle-tp=abc" "--isle-mode=sometimes" "--isle-compress=topk:2"; do
	if msg=$(sbatch -N1 --gpus-per-node=4 "$bad" -o /dev/null --wrap true 2>&1); then
		fail "sbatch accepted $bad: $msg"
	fi
	echo "$msg" | isle_grep_q "invalid --${bad#--}" || echo "$msg" | isle_grep_q "invalid --${bad%%=*}" ||
		echo "$msg" | isle_grep_q -i "isle" || fail "no clear message for $bad: $msg"
done
msg=$(sbatch -N1 --gpus-per-node=4 --isle-tp=abc -o /dev/null --wrap true 2>&1 || true)
echo "$msg" | isle_grep_q "invalid --isle-tp 'abc'" || fail "message for --isle-tp=abc: $msg"

# --- 5. corrupted cluster file + reconfigure --------------------------------
cfg=$ISLE_CLUSTER_DIR/etc/isle.json
cp "$cfg" "$work/isle.good.json"
sed -i 's/"gpus": 4, "rack": "rack1"/"gpus": "four", "rack": "rack1"/' "$cfg"
scontrol reconfigure || fail "scontrol reconfigure failed"
for _ in $(seq 1 60); do
	grep -q "isle: cannot load cluster file $cfg" "$log" && break
	sleep 0.5
done
grep "isle: cannot load cluster file" "$log" | tail -1
grep -q "isle: cannot load cluster file $cfg: .*nodes\[0\].gpus" "$log" ||
	fail "no error naming the file and field"
scontrol ping | isle_grep_q UP || fail "controller down after a bad cluster file"
scontrol show topology | isle_grep_q "Status=fallback" || fail "topology does not report the fallback"
for j in "${hold[@]}"; do
	[ "$(squeue -h -j "$j" -o %T)" = RUNNING ] || fail "running job $j lost over reconfigure"
done
j=$(sbatch --parsable -N2 --gpus-per-node=4 --isle-tp=8 -o /dev/null --wrap true)
isle_wait_job "$j" 60 || fail "job $j did not run under the fallback"

# Restored with one benign finding, a spare switch cabled to nothing: the
# file loads and the warning reaches the controller's log.
sed 's/^  "switches": \[$/&\n    {"name": "spare1", "level": "spine"},/' \
	"$work/isle.good.json" >"$cfg"
scontrol reconfigure || fail "second reconfigure failed"
for _ in $(seq 1 60); do
	scontrol show topology 2>/dev/null | isle_grep_q "Status=ok" && break
	sleep 0.5
done
scontrol show topology | isle_grep_q "Status=ok" || fail "restored file not reloaded"
want="isle: $cfg: \$.switches[0] (spare1): no nodes and no child switches"
for _ in $(seq 1 60); do
	grep -qF "$want" "$log" && break
	sleep 0.5
done
grep -F "(spare1)" "$log" | tail -1
grep -qF "$want" "$log" || fail "no loader warning in slurmctld's log: $want"
ac=$(scontrol show job "${tp_jobs[0]}" | grep -o 'AdminComment=.*' || true)
[[ $ac == *"isle: tp=8"* ]] || fail "decision line lost over restart: $ac"
"$repo/build/bin/islectl" explain "${tp_jobs[0]}" >/dev/null || fail "record lost over restart"

# Partitions still bound the choice.
j=$(sbatch --parsable -p isl2 -N2 --gpus-per-node=4 --isle-tp=8 -o /dev/null --wrap true)
isle_wait_job "$j" 60 || fail "job $j in partition isl2 did not run"
for n in $(isle_pt_job_nodes "$j"); do
	[[ $n == n0[5-8] ]] || fail "job $j in partition isl2 ran on $n"
done

# The harness's gres.conf has no Cores=: the controller says so once per
# node it looked at, per start (reconfigure above starts a new slurmctld
# on 24.11), never once per evaluation.
starts=$(grep -c "slurmctld version .* started" "$log" || true)
for n in n01 n05; do
	c=$(grep -c "isle: node $n: gres.conf gives its GPUs no Cores=" "$log" || true)
	[ "$c" -ge 1 ] && [ "$c" -le "$starts" ] ||
		fail "node $n: $c warnings about gres.conf without Cores= in $starts controller starts"
done

scancel "${hold[@]}"
echo "PASS"
