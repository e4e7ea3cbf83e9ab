#!/bin/bash
# 59-fault-prolog-agent: the job prolog's `isle-agent plan write` hangs or
# fails. plugstack.conf points agent= at a stand-in and sets
# agent_timeout=5; slurm.conf sets the prolog limit to 40 s
# (PrologEpilogTimeout; 26.05 reads it as PrologTimeout too).
#  1. an agent that sleeps forever: the prolog kills it after 5 s and says
#     so in the slurmd log ("timed out after 5 s; killed", "runs without the
#     shim"), the job runs and completes, its stderr says the shim is off and
#     why; the node is not drained and the job not requeued (the prolog
#     stayed within its limit); no agent process is left.
#  2. an agent that exits 1 (no plan, reason in the run dir - here none) and
#     one that exits 3: the same, without the wait.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$repo/slurm_plugin/testlib.sh"
isle_pt_setup

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-t59.XXXXXX")
chmod 0755 "$work"
trap 'rm -rf "$work"' EXIT
isle_pt_gb200 "$work" 2 2 2
# The stand-in agent: its behaviour comes from a file, so one plugstack.conf
# serves every case. "hang" renames the sleep after this file (found later).
cat >"$work/agent" <<AGENT
#!/bin/bash
mode=\$(cat "$work/mode")
echo "\$\$ \$*" >>"$work/agent.calls"
case \$mode in
hang) exec -a "$work/agent-sleeping" sleep 100000 ;;
fail1) echo "stand-in agent: no plan for you" >&2; exit 1 ;;
fail3) echo "stand-in agent: crashed" >&2; exit 3 ;;
esac
AGENT
chmod 0755 "$work/agent"
isle_pt_plugstack "$work" "shim=$repo/build/lib/libisle_preload.so agent=$work/agent agent_timeout=5 rundir=$work/run"
mkdir -p "$work/run"
isle_cluster_start --nodes 2 --gpus 4 --topology isle \
	--plugin-dir "$repo/build/slurm" --plugstack "$work/plugstack.conf" \
	--etc-file "$work/isle.json" --slurm-extra "PrologEpilogTimeout=40" || fail "cluster did not start"
d=$ISLE_CLUSTER_DIR

# case MODE LOGPATTERN: one job under the stand-in agent in MODE.
case_() {
	local mode=$1 pat=$2 j out st calls0 node
	echo "$mode" >"$work/mode"
	calls0=$(cat "$work/agent.calls" 2>/dev/null | grep -c ' plan write ' || true)
	out=$d/jobs/t59-$mode.out
	mkdir -p "$d/jobs"
	j=$(sbatch --parsable -N1 --gpus-per-node=2 -o "$out" --wrap "echo job-ran-$mode")
	st=$(isle_wait_job "$j" 180) || fail "$mode: job $j ended $st: $(scontrol -o show job "$j" | grep -o 'Reason=[^ ]*')"
	node=$(isle_job_field "$j" NodeList)
	[ "$(grep -c ' plan write ' "$work/agent.calls" 2>/dev/null)" -gt "$calls0" ] ||
		fail "$mode: the prolog did not call the agent"
	grep -q "job-ran-$mode" "$out" || fail "$mode: job output lacks its line: $(cat "$out")"
	grep -q "isle: shim off for job $j on $node: " "$out" || fail "$mode: the job does not say the shim is off: $(cat "$out")"
	wait_for 30 grep -q "$pat" "$d/log/slurmd-$node.log" || fail "$mode: slurmd log lacks /$pat/"
	grep -q "isle: job $j: .*runs without the shim" "$d/log/slurmd-$node.log" ||
		fail "$mode: slurmd log does not say job $j runs without the shim"
	[ "$(isle_job_field "$j" Restarts)" = 0 ] || fail "$mode: job $j was requeued"
	case $(sinfo -h -n "$node" -o %T) in
	*drain* | down*) fail "$mode: $node is $(sinfo -h -n "$node" -o '%T %E')" ;;
	esac
	echo "ok   $mode: job $j completed on $node; $(grep -o "isle: shim off for job $j.*" "$out")"
	grep "$pat" "$d/log/slurmd-$node.log" | tail -1 | sed 's/^/     slurmd: /'
}

case_ hang "isle: $work/agent timed out after 5 s; killed"
# SIGKILL went to the agent's own process: nothing of it is left.
left=$(grep -lsF "$work/agent-sleeping" /proc/[0-9]*/cmdline || true)
[ -z "$left" ] || fail "hang: agent processes left: $left"
case_ fail1 "isle: stand-in agent: no plan for you"
case_ fail3 "isle: job [0-9]*: $work/agent plan write failed (status 3)"
isle_cluster_stop
echo "PASS"
