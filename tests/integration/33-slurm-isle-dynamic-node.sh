#!/bin/bash
# 33-slurm-isle-dynamic-node: a node added at run time with `scontrol create
# node` (dynamic nodes, MaxNodeCount) takes part in isle's placement without
# a reconfigure.
#  The cluster file describes n[01-08] (nvl1 = n[01-04], nvl2 = n[05-08]);
#  slurm.conf starts with n[01-04]. n05 is created with scontrol (25.11+:
#  with Topology=default:rack2:nvl2:leaf2, which isle checks against the
#  cluster file) and its slurmd started. Then:
#   - `scontrol show topology nvl2` lists n05 with its 4 free GPUs,
#   - with n[01-04] held, a --isle-tp=4 job runs on n05 and its AdminComment
#     is isle's decision (islands=nvl2), not a fallback,
#   - from 25.11 `scontrol show node n05` shows Topology=default:rack2:nvl2:leaf2,
#     and a Topology= unit the cluster file contradicts is logged.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$repo/slurm_plugin/testlib.sh"
isle_pt_setup
ver=$("$ISLE_SLURM_PREFIX/sbin/slurmctld" -V | awk '{print $2}')

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-t33.XXXXXX")
trap 'rm -rf "$work"' EXIT
isle_pt_gb200 "$work" 8 4 4
isle_pt_plugstack "$work"
isle_cluster_start --nodes 4 --gpus 4 --topology isle \
	--plugin-dir "$repo/build/slurm" --plugstack "$work/plugstack.conf" \
	--etc-file "$work/isle.json" --slurm-extra "MaxNodeCount=8" || fail "cluster did not start"
d=$ISLE_CLUSTER_DIR
log=$d/log/slurmctld.log
grep -q "isle: loaded .*isle.json: 8 nodes" "$log" || fail "cluster file not loaded"
t=$(isle_pt_topo nvl2)
echo "$t" | isle_grep_q "FreeGPUs=0" || fail "nvl2 has free GPUs before n05 exists: $t"

# A free port for n05's slurmd.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
nodeline="NodeName=n05 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$port CPUs=16 RealMemory=16000 Gres=gpu:4"
topo=""
case $ver in 24.11.*) ;; *) topo="Topology=default:rack2:nvl2:leaf2" ;; esac
# shellcheck disable=SC2086 # word splitting intended
scontrol create $nodeline State=FUTURE $topo || fail "scontrol create node n05 failed"
# n05's own slurmd reads the files on disk; slurmctld is not reconfigured.
echo "$nodeline" >>"$d/etc/slurm.conf"
echo "NodeName=n05 Name=gpu File=$d/dev/nvidia[0-3]" >>"$d/etc/gres.conf"
mkdir -p "$d/spool/n05" "$d/tmp/n05"
isle__spawn "$d" slurmd n05 "$ISLE_SLURM_PREFIX/sbin/slurmd" -D -N n05 -f "$d/etc/slurm.conf"
for ((i = 0; i < 240; i++)); do
	[ "$(sinfo -h -n n05 -o %T 2>/dev/null)" = idle ] && break
	sleep 0.5
done
[ "$(sinfo -h -n n05 -o %T)" = idle ] || fail "n05 is not idle: $(sinfo -h -n n05 -o '%T %E')"

# --- n05 in isle's model ----------------------------------------------------
# (The model is patched on the next evaluation at the latest: run one job.)
h=$(sbatch --parsable -N1 -w n01 --gpus-per-node=4 -o /dev/null --wrap "sleep 600")
isle_pt_wait_state "$h" RUNNING 120 || fail "holder on n01 did not start"
holders=("$h")
for n in n02 n03 n04; do
	h=$(sbatch --parsable -N1 -w "$n" --gpus-per-node=4 -o /dev/null --wrap "sleep 600")
	isle_pt_wait_state "$h" RUNNING 120 || fail "holder on $n did not start"
	holders+=("$h")
done
t=$(isle_pt_topo nvl2)
echo "$t"
echo "$t" | isle_grep_q "IslandName=nvl2 .*Nodes=n05 GPUs=[0-9]* FreeGPUs=4" || fail "nvl2 does not list n05 with 4 free GPUs"

j=$(sbatch --parsable -N1 --gpus-per-node=4 --isle-tp=4 -o /dev/null --wrap "sleep 600")
isle_pt_wait_state "$j" RUNNING 120 || fail "TP=4 job did not start: $(squeue -h -j "$j" -o %r)"
[ "$(isle_job_field "$j" NodeList)" = n05 ] || fail "TP=4 job on $(isle_job_field "$j" NodeList), want n05"
ac=$(scontrol -o show job "$j" | grep -o 'AdminComment=isle: .*' || true)
echo "$ac" | isle_grep_q "^AdminComment=isle: tp=4 .*nodes=n05 islands=nvl2" || fail "AdminComment is not isle's decision: $ac"
ac=${ac%% cost=*}
echo "ok: $ac"

case $ver in
24.11.*) ;;
*)
	got=$(scontrol show node n05 | grep -o 'Topology=[^ ]*' || true)
	[ "$got" = "Topology=default:rack2:nvl2:leaf2" ] || fail "scontrol show node n05: '$got'"
	scontrol update nodename=n05 topology=default:nvl1 >/dev/null 2>&1 || true
	for ((i = 0; i < 60; i++)); do
		grep -q "isle: node n05: topology unit nvl1 is not a rack, island or switch of this node" "$log" && break
		sleep 0.5
	done
	grep -q "isle: node n05: topology unit nvl1 is not" "$log" || fail "a contradicting Topology= unit was not logged"
	;;
esac

scancel "$j" "${holders[@]}"
isle_cluster_stop
echo "PASS"
