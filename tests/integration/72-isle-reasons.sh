#!/bin/bash
# 72-isle-reasons: what users and admins are told, and told truthfully
# (8 nodes x 4 GPUs, NVLink domains nvl1 = n[01-04], nvl2 = n[05-08]).
#  1. Impossible isle requests are refused at submit with the reason, by
#     job_submit/isle (JobSubmitPlugins=isle): TP x PP not dividing the
#     GPUs, required-mode TP larger than the largest island (16 GPUs). Via
#     sbatch (the reason on its stderr) and via libslurm
#     (tests/integration/isle_submit.c, no spank_isle.so), logged once.
#  2. On a partly busy cluster the saved decision record of a started job
#     names the GPUs Slurm granted: `islectl explain` matches
#     `scontrol -d show job` GRES on every node.
#  3. A broken cluster file (fallback to Slurm's default selection) keeps a
#     pending required-mode TP=8 job pending (its AdminComment names the
#     fallback) although default selection could start it across the two
#     islands; a preferred job runs with "isle: fallback (...)". After the
#     good file is restored (scontrol reconfigure) the job starts inside one
#     island.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$repo/slurm_plugin/testlib.sh"
isle_pt_setup
[ -f "$repo/build/slurm/job_submit_isle.so" ] || { echo "FAIL: build/slurm/job_submit_isle.so not built (make)"; exit 1; }
[ -x "$repo/build/bin/islectl" ] || { echo "FAIL: build/bin/islectl not built (make)"; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-t72.XXXXXX")
trap 'rm -rf "$work"' EXIT

isle_pt_submit_tool "$work" || fail "cannot build isle_submit against ${ISLE_SLURM_PREFIX:-24.11}"

isle_pt_gb200 "$work" 8 4 4
isle_pt_plugstack "$work" default_mode=preferred

isle_cluster_start --nodes 8 --gpus 4 --topology isle \
	--plugin-dir "$repo/build/slurm" --plugstack "$work/plugstack.conf" \
	--etc-file "$work/isle.json" || fail "cluster did not start"
log=$ISLE_CLUSTER_DIR/log/slurmctld.log
grep -q "isle: loaded .*isle.json: 8 nodes" "$log" || fail "cluster file not loaded"
grep -q "^JobSubmitPlugins=isle" "$ISLE_CLUSTER_DIR/etc/slurm.conf" || fail "harness did not configure job_submit/isle"

state() { isle_job_field "$1" JobState; }
ac() { scontrol show job "$1" | grep -o 'AdminComment=.*' || true; }

# --- 1. reasons at submit ----------------------------------------------------
# expect_refused WANT CMD...: CMD fails and its stderr holds WANT.
expect_refused() {
	local want=$1 out
	shift
	if out=$("$@" 2>&1); then
		fail "accepted ($out): $*"
	fi
	echo "refused: $* -> $out"
	echo "$out" | isle_grep_q -- "$want" || fail "no reason '$want' in: $out"
}
div="does not divide the job's"
big="the largest has 16 GPUs"
expect_refused "--isle-tp=3 x --isle-pp=1 = 3 GPUs per model replica $div 8 GPUs" \
	sbatch -N2 --gpus-per-node=4 --isle-tp=3 -o /dev/null --wrap true
expect_refused "--isle-tp=8 x --isle-pp=1 = 8 GPUs per model replica $div 4 GPUs" \
	sbatch --gpus=4 --isle-tp=8 -o /dev/null --wrap true
expect_refused "--isle-tp=4 x --isle-pp=3 = 12 GPUs per model replica $div 8 GPUs" \
	sbatch -N2 --gpus-per-node=4 --isle-tp=4 --isle-pp=3 -o /dev/null --wrap true
expect_refused "--isle-tp=32 cannot be kept inside one NVLink island ($big)" \
	sbatch -N8 --gpus-per-node=4 --isle-tp=32 --isle-mode=required -o /dev/null --wrap true
# The controller answers for jobs that never pass spank_isle.so.
expect_refused "$div 8 GPUs" "$work/isle_submit" -N 2 --tres-per-node gres/gpu:4 \
	--spank SPANK_ISLE_TP=3
expect_refused "($big)" "$work/isle_submit" -N 8 --tres-per-job gres/gpu:32 \
	--spank SPANK_ISLE_TP=32 --spank SPANK_ISLE_MODE=required
# Logged once per submission (6 refusals, 6 lines).
n=$(grep -c "isle: job submission from uid [0-9]* refused" "$log" || true)
[ "$n" = 6 ] || fail "expected 6 refusal lines in slurmctld.log, got $n"
# Preferred mode may cross islands: TP=32 is accepted and runs.
j=$(sbatch --parsable -N8 --gpus-per-node=4 --isle-tp=32 -o /dev/null --wrap true) ||
	fail "preferred --isle-tp=32 refused"
isle_wait_job "$j" 120 >/dev/null || fail "preferred TP=32 job $j did not run"

# --- 2. explain shows the GPUs Slurm granted ---------------------------------
# Busy GPUs: 2 on n01, 3 on n02 and 1 on n05 (the lowest ones, Slurm's pick).
b1=$(sbatch --parsable -w n01 -N1 --gpus-per-node=2 -o /dev/null --wrap "sleep 3000")
b2=$(sbatch --parsable -w n02 -N1 --gpus-per-node=3 -o /dev/null --wrap "sleep 3000")
b3=$(sbatch --parsable -w n05 -N1 --gpus-per-node=1 -o /dev/null --wrap "sleep 3000")
for b in $b1 $b2 $b3; do
	wait_for 120 bash -c "[ \"\$(squeue -h -j $b -o %T)\" = RUNNING ]" || fail "blocker $b not running"
done
jobs=()
for spec in "-N1 --gpus-per-node=2 --isle-tp=2" "-N2 --gpus-per-node=2 --isle-tp=2" \
	"-N1 --gpus=1" "-N1 --gpus-per-node=2 --isle-tp=2"; do
	# shellcheck disable=SC2086
	j=$(sbatch --parsable $spec -o /dev/null --wrap "sleep 3000") || fail "sbatch $spec"
	jobs+=("$j")
done
for j in "${jobs[@]}"; do
	wait_for 120 bash -c "[ \"\$(squeue -h -j $j -o %T)\" = RUNNING ]" || fail "job $j not running"
	wait_for 60 test -f "$ISLE_CLUSTER_DIR/state/isle/job_$j.json" || fail "no record of job $j"
	out=$("$repo/build/bin/islectl" explain --state-dir "$ISLE_CLUSTER_DIR/state" "$j") ||
		fail "islectl explain $j"
	granted=$(echo "$out" | grep '^Granted:') || fail "explain $j has no Granted line: $out"
	placement=$(echo "$out" | grep '^Placement:') || fail "explain $j has no Placement line: $out"
	echo "job $j: $granted"
	nn=0
	# scontrol -d groups nodes with the same GRES ("n[03-04] 0-1").
	while read -r nodes idx; do
		[ -n "$idx" ] || fail "job $j: no GRES index on $nodes in scontrol -d"
		for node in $(scontrol show hostnames "$nodes"); do
			nn=$((nn + 1))
			echo "$granted" | isle_grep_q -F " $node GPUs $idx;" ||
				fail "job $j: Slurm granted $node GPUs $idx, explain says: $granted"
			echo "$placement" | isle_grep_q -F " $node GPUs $idx;" ||
				fail "job $j: Slurm granted $node GPUs $idx, the recorded placement says: $placement"
		done
	done < <(isle_job_gres_idx "$j")
	[ "$nn" -gt 0 ] || fail "job $j: no GRES in scontrol -d show job"
	[ "$(echo "$granted" | grep -o ' GPUs ' | wc -l)" = "$nn" ] ||
		fail "job $j: explain lists other nodes than Slurm: $granted"
done
scancel "${jobs[@]}" "$b1" "$b2" "$b3"
wait_for 120 bash -c "[ -z \"\$(squeue -h -t R,CG,PD)\" ]" || fail "jobs did not end"

# --- 3. the fallback keeps required mode -------------------------------------
# Free: n04 (nvl1) and n05 (nvl2) only, so no TP=8 placement inside an island.
blk=()
for n in n01 n02 n03 n06 n07 n08; do
	blk+=("$(sbatch --parsable -w "$n" -N1 --gpus-per-node=4 -o /dev/null --wrap "sleep 3000")")
done
for b in "${blk[@]}"; do
	wait_for 120 bash -c "[ \"\$(squeue -h -j $b -o %T)\" = RUNNING ]" || fail "blocker $b not running"
done
req=$(sbatch --parsable -N2 --gpus-per-node=4 --isle-tp=8 --isle-mode=required -o /dev/null \
	--wrap "sleep 3000") || fail "required job refused"
# Waiting for an island now, or planned by backfill for when one frees up.
wait_for 120 bash -c "scontrol show job $req | grep -Eq 'AdminComment=isle: (waiting: no placement now|planned tp=8 )'" ||
	fail "required job $req: $(ac "$req")"
[ "$(state "$req")" = PENDING ] || fail "required job $req not pending: $(state "$req")"

good=$ISLE_CLUSTER_DIR/etc/isle.json
cp "$good" "$work/good.json"
echo '{"version": 1, "name": "broken", "nodes": [' >"$good"
timeout 60 scontrol reconfigure || fail "scontrol reconfigure (broken file)"
wait_for 120 bash -c "scontrol show topology 2>/dev/null | grep -q Status=fallback" ||
	fail "no fallback after the broken file"
# The scheduler has looked at the job in fallback once its AdminComment says so.
wait_for 180 bash -c "scontrol show job $req | grep -q 'AdminComment=isle: waiting: fallback (cannot load the cluster file: '" ||
	fail "required job $req in fallback: $(ac "$req")"
[ "$(state "$req")" = PENDING ] || fail "required job $req left pending in fallback: $(state "$req") on $(isle_job_field "$req" NodeList)"
grep -q "isle: JobId=$req: waiting: fallback" "$log" || fail "fallback wait of $req not logged"
[ "$(grep -c "isle: JobId=$req: waiting: fallback" "$log")" = 1 ] || fail "fallback wait of $req logged more than once"
# A preferred job runs under default selection and says so.
p=$(sbatch --parsable -N1 --gpus-per-node=4 --isle-tp=4 -o /dev/null --wrap true) || fail "preferred job in fallback"
isle_wait_job "$p" 120 >/dev/null || fail "preferred job $p did not run in fallback"
scontrol show job "$p" | isle_grep_q "AdminComment=isle: fallback (cannot load the cluster file: .*): Slurm's default selection" ||
	fail "preferred job $p: $(ac "$p")"
[ "$(state "$req")" = PENDING ] || fail "required job $req started in fallback"

cp "$work/good.json" "$good"
timeout 60 scontrol reconfigure || fail "scontrol reconfigure (good file)"
wait_for 120 bash -c "scontrol show topology 2>/dev/null | grep -q Status=ok" || fail "good file not reloaded"
# Free n01: nvl1 now holds two free nodes.
scancel "${blk[0]}"
wait_for 180 bash -c "[ \"\$(squeue -h -j $req -o %T)\" = RUNNING ]" || fail "required job $req did not start: $(ac "$req")"
doms=$(isle_pt_job_nodes "$req" | while read -r n; do awk -v n="$n" '$1 == n { print $2 }' "$work/domains"; done | sort -u)
[ "$(echo "$doms" | wc -l)" = 1 ] || fail "required job $req spans islands: $doms"
scontrol show job "$req" | isle_grep_q "AdminComment=isle: tp=8 pp=1 dp=1 nodes=n\[01,04\] islands=nvl1 .*tp_in_island=1/1" ||
	fail "required job $req: $(ac "$req")"
scancel "$req" "${blk[@]}"
echo "PASS"
