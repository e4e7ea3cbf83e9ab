#!/bin/bash
# 57-fault-cluster-file: the cluster file swapped at `scontrol reconfigure`
# for a corrupt one, one with fewer nodes than slurm.conf and one with more.
# Each time slurmctld stays up, logs (isle: prefix) what it did, a job
# running since before keeps running, and new jobs are scheduled:
#  - corrupt: "cannot load cluster file FILE: WHERE"; selection falls back to
#    Slurm's default (`scontrol show topology`: Status=fallback) until a good
#    file is back (reconfigure starts a new slurmctld, which keeps no model
#    of the old process);
#  - fewer (n[01-03] of n[01-04]): "1 Slurm node(s) are not in FILE (first:
#    n04)"; isle places on n[01-03], n04 gets default selection;
#  - more (n[01-06]): "2 node(s) of FILE are not Slurm nodes (first: n05)";
#    isle places on the Slurm nodes only;
#  - the original file again: loaded, Status=ok.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$repo/slurm_plugin/testlib.sh"
isle_pt_setup

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-t57.XXXXXX")
trap 'rm -rf "$work"' EXIT
isle_pt_gb200 "$work" 4 4 4
isle_pt_gb200 "$work/few" 3 4 4
isle_pt_gb200 "$work/more" 6 4 4
isle_cluster_start --nodes 4 --gpus 4 --topology isle \
	--plugin-dir "$repo/build/slurm" --etc-file "$work/isle.json" || fail "cluster did not start"
d=$ISLE_CLUSTER_DIR
log=$d/log/slurmctld.log
cfg=$d/etc/isle.json
grep -q "isle: loaded $cfg: 4 nodes" "$log" || fail "cluster file not loaded"

hold=$(sbatch --parsable -N1 -w n01 --gpus-per-node=4 -o /dev/null --wrap "sleep 900")
isle_pt_wait_state "$hold" RUNNING 120 || fail "holder did not start"
hold_ac=$(scontrol -o show job "$hold" | grep -o 'AdminComment=isle: tp=[^ ]*' || true)
[ -n "$hold_ac" ] || fail "holder has no isle decision"

# swap FILE PATTERN: install FILE as the cluster file, reconfigure, wait
# for a log line matching PATTERN written after the reconfigure.
swap() {
	local file=$1 pat=$2 mark
	mark=$(wc -l <"$log")
	cp "$file" "$cfg"
	scontrol reconfigure || fail "scontrol reconfigure failed ($file)"
	new_lines() { tail -n +"$((mark + 1))" "$log"; }
	wait_for 120 sh -c "tail -n +$((mark + 1)) '$log' | grep -q '$pat'" ||
		fail "no log line /$pat/ after reconfigure with $file"
	new_lines | grep 'isle: ' | grep -v 'isle: version' | sed 's/^/     log: /' | head -5
	# The new controller answers and the running job is still there.
	wait_for 60 sh -c 'scontrol ping | grep -q UP' || fail "slurmctld is not up after $file"
	[ "$(squeue -h -j "$hold" -o %T)" = RUNNING ] || fail "running job $hold lost over reconfigure ($file)"
}

# run_job ARGS...: a short job runs to completion; sets J and its node
# list NL.
run_job() {
	J=$(sbatch --parsable -o /dev/null "$@" --wrap true) || fail "sbatch $* failed"
	isle_wait_job "$J" 120 >/dev/null || fail "job $J ($*) did not complete: $(squeue -h -j "$J" -o '%T %r')"
	NL=$(isle_job_field "$J" NodeList)
}

# --- corrupt -----------------------------------------------------------------
head -c 200 "$work/isle.json" >"$work/corrupt.json"
swap "$work/corrupt.json" "isle: cannot load cluster file $cfg: "
scontrol show topology | isle_grep_q "Status=fallback" || fail "topology does not report the fallback"
run_job -N2 --gpus-per-node=4
echo "ok: corrupt file: fallback, a 2-node job ran on $NL"

# --- fewer nodes than slurm.conf ---------------------------------------------
swap "$work/few/isle.json" "isle: 1 Slurm node(s) are not in $cfg (first: n04); they get default selection"
grep -q "isle: loaded $cfg: 3 nodes" <(tail -n 40 "$log") || fail "3-node file not loaded"
scontrol show topology | isle_grep_q "Status=ok" || fail "3-node file: topology not ok"
run_job -N1 -w n04 --gpus-per-node=4
[ "$NL" = n04 ] || fail "job for n04 ran on $NL"
run_job -N1 --gpus-per-node=4 -x n04
[[ $NL == n0[23] ]] || fail "job on the file's nodes ran on $NL"
ac=$(scontrol -o show job "$J" | grep -o 'AdminComment=isle: tp=.*' || true)
[[ $ac == *" nodes=$NL "* ]] || fail "no isle decision for $J on $NL: $ac"
echo "ok: fewer nodes: n04 by default selection, isle placed on $NL"

# --- more nodes than slurm.conf ----------------------------------------------
swap "$work/more/isle.json" "isle: 2 node(s) of $cfg are not Slurm nodes (first: n05); isle places no job on them"
grep -q "isle: loaded $cfg: 6 nodes" <(tail -n 40 "$log") || fail "6-node file not loaded"
scontrol show topology | isle_grep_q "Status=ok" || fail "6-node file: topology not ok"
run_job -N3 --gpus-per-node=4 -x n01
ac=$(scontrol -o show job "$J" | grep -o 'AdminComment=isle: tp=.*' || true)
[[ $ac == *" nodes=n[02-04] "* ]] || fail "3-node job: not isle's decision on n[02-04]: $ac"
echo "ok: more nodes: isle placed a 3-node job on $NL"

# --- the original file -------------------------------------------------------
swap "$work/isle.json" "isle: loaded $cfg: 4 nodes"
scontrol show topology | isle_grep_q "Status=ok" || fail "original file: topology not ok"
run_job -N1 --gpus-per-node=4
ac=$(scontrol -o show job "$hold" | grep -o 'AdminComment=isle: tp=[^ ]*' || true)
[ "$ac" = "$hold_ac" ] || fail "holder's decision changed over 4 reconfigures: '$hold_ac' -> '$ac'"
echo "ok: original file reloaded; holder $hold still running with its decision"
scancel "$hold"
isle_cluster_stop
echo "PASS"
