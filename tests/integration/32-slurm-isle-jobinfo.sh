#!/bin/bash
# 32-slurm-isle-jobinfo: what the topology interface of Slurm 25.11 and
# 26.05 lets isle keep in Slurm itself, on an 8-node GB200-like cluster
# (NVLink domains nvl1 = n[01-04], nvl2 = n[05-08]; leaf1/rack1 and
# leaf2/rack2 likewise).
#  1. `scontrol show node` shows each node's isle topology:
#     Topology=default:RACK:ISLAND:LEAF (get_topology_str).
#  2. A running --isle-tp=8 job's decision is packed into Slurm's own job
#     state (per-job topology info). slurmctld is killed with SIGKILL, isle's
#     own decision record is deleted while it is down, and after the restart
#     `islectl explain` shows the decision again, restored from the job state;
#     the job keeps running and AdminComment keeps the isle line.
#     Slurm 24.11 keeps no per-job topology info: skipped there (77).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$repo/slurm_plugin/testlib.sh"
isle_pt_setup
ver=$("$ISLE_SLURM_PREFIX/sbin/slurmctld" -V | awk '{print $2}')
case $ver in
24.11.*)
	echo "SKIP: Slurm $ver has no per-job topology info and no node topology strings (25.11 and 26.05: topology_p_jobinfo_*, topology_p_get_topology_str); there the decision lives in isle's own record"
	exit 77
	;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-t32.XXXXXX")
trap 'rm -rf "$work"' EXIT
isle_pt_gb200 "$work" 8 4 4
isle_pt_plugstack "$work"
isle_cluster_start --nodes 8 --gpus 4 --topology isle \
	--plugin-dir "$repo/build/slurm" --plugstack "$work/plugstack.conf" \
	--etc-file "$work/isle.json" || fail "cluster did not start"
d=$ISLE_CLUSTER_DIR
log=$d/log/slurmctld.log
grep -q "isle: loaded .*isle.json: 8 nodes" "$log" || fail "cluster file not loaded"

# --- 1. Topology= in scontrol show node ------------------------------------
for want in "n01 default:rack1:nvl1:leaf1" "n04 default:rack1:nvl1:leaf1" \
	"n05 default:rack2:nvl2:leaf2" "n08 default:rack2:nvl2:leaf2"; do
	node=${want%% *} topo=${want#* }
	got=$(scontrol show node "$node" | grep -o 'Topology=[^ ]*' || true)
	[ "$got" = "Topology=$topo" ] || fail "scontrol show node $node: '$got', want Topology=$topo"
done
echo "ok: scontrol show node n05 -> $(scontrol show node n05 | grep -o 'Topology=[^ ]*')"

# --- 2. decision survives SIGKILL + restart of slurmctld -------------------
j=$(sbatch --parsable -N2 --gpus-per-node=4 --isle-tp=8 -o /dev/null --wrap "sleep 900")
isle_pt_wait_state "$j" RUNNING 120 || fail "TP=8 job did not start: $(squeue -h -j "$j" -o %r)"
before=$("$repo/build/bin/islectl" explain "$j") || fail "islectl explain $j before the restart"
line=${before%%$'\n'*}
echo "$line" | isle_grep_q "^Job $j: isle: tp=8 pp=1 dp=1 " || fail "explain before restart: $line"
islands=$(echo "$line" | grep -o 'islands=[^ ]*')
nodes=$(isle_job_field "$j" NodeList)

# The decision must be in the job state file before the kill: change the job
# (Comment) after a marker and wait for slurmctld to save its state again.
state=$(awk -F= 'tolower($1) == "statesavelocation" {print $2}' "$d/etc/slurm.conf")
[ -d "$state" ] || fail "StateSaveLocation $state"
touch "$work/marker"
sleep 1
scontrol update jobid="$j" comment=t32 || fail "scontrol update comment"
for ((i = 0; i < 240; i++)); do
	[ "$state/job_state" -nt "$work/marker" ] && break
	sleep 0.5
done
[ "$state/job_state" -nt "$work/marker" ] || fail "slurmctld did not save job state within 120s"

ctld=$(awk '$1 == "slurmctld" { print $3 }' "$d/pids" | tail -1)
kill -9 "$ctld"
for ((i = 0; i < 120; i++)); do
	kill -0 "$ctld" 2>/dev/null || break
	sleep 0.5
done
kill -0 "$ctld" 2>/dev/null && fail "slurmctld $ctld survived SIGKILL"
rm -f "$state/isle/job_$j.json"
isle_ctld_restart || fail "slurmctld did not come back"

[ "$(squeue -h -j "$j" -o %T)" = RUNNING ] || fail "job $j is not running after the restart"
[ "$(isle_job_field "$j" NodeList)" = "$nodes" ] || fail "job $j nodes changed"
scontrol -o show job "$j" | isle_grep_q "AdminComment=isle: tp=8 " || fail "AdminComment lost the isle line"
# The writer may first file the record rebuilt from the AdminComment line,
# then the one restored from the job state: wait for the latter.
after=""
for ((i = 0; i < 120; i++)); do
	after=$("$repo/build/bin/islectl" explain "$j" 2>/dev/null) &&
		grep -q "^Candidates:" <<<"$after" && break
	sleep 0.5
done
[ -n "$after" ] || fail "islectl explain $j after the restart: no record (not restored from job state)"
first=${after%%$'\n'*}
echo "$first" | isle_grep_q "^Job $j: isle: tp=8 pp=1 dp=1 .*$islands" ||
	fail "explain after restart: $first"
echo "$after" | isle_grep_q "^Candidates:" || fail "restored record lacks candidates"
echo "ok: after SIGKILL + restart: $first"

scancel "$j"
isle_cluster_stop
echo "PASS"
