#!/bin/bash
# 31-slurm-isle-gpus: GPU choice inside a node follows the NVLink islands.
# One PCIe node with 8 GPUs and NVLink pairs (0,1) (2,3) (4,5) (6,7), under
# topology/isle. A 1-GPU job takes GPU 0 first, so first-fit would give the
# next job 1,2,3,4 (or 3,4,5,6 later) and split its pairs. gres.conf has
# one line per GPU with Cores= (so slurmctld keeps per-GPU topology) but no
# Links=: Slurm alone gives the 4-GPU job 1,2,3,4 here; isle narrows the GPUs
# cons_tres may pick to whole islands itself.
#  1. --isle-tp=2 --gpus=4 gets two whole pairs (never 3,4,5,6).
#  2. --isle-tp=2 --gpus=2 gets one linked pair.
#  3. The tasks' CUDA_VISIBLE_DEVICES follows the granted indices.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$repo/slurm_plugin/testlib.sh"
isle_pt_setup 30

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-t31.XXXXXX")
trap 'rm -rf "$work"' EXIT
isle_pt_pcie "$work" 1 nolinks
isle_pt_plugstack "$work"

isle_cluster_start --nodes 1 --gpus 8 --topology isle \
	--plugin-dir "$repo/build/slurm" --plugstack "$work/plugstack.conf" \
	--etc-file "$work/isle.json" --gres-conf "$work/gres.conf" || fail "cluster did not start"
jobs=$ISLE_CLUSTER_DIR/jobs

# pairs_whole "IDX list": every NVLink pair is wholly in or wholly out.
pairs_whole() {
	local -A in=()
	local g
	for g in $1; do in[$g]=1; done
	for g in 0 2 4 6; do
		[ "${in[$g]:-0}" = "${in[$((g + 1))]:-0}" ] || return 1
	done
}

gres_of() { isle_job_gres_idx "$1" | awk '{ print $2 }'; }

a=$(sbatch --parsable -N1 --gpus=1 -o /dev/null --wrap "sleep 600")
isle_pt_wait_state "$a" RUNNING 60 || fail "1-GPU job did not start"
echo "1-GPU job $a: GPUs $(gres_of "$a")"

cat >"$jobs/gpus.sh" <<'EOF'
#!/bin/bash
echo "CVD=${CUDA_VISIBLE_DEVICES:-unset} JOB_GPUS=${SLURM_JOB_GPUS:-unset} ISLE_TP=${ISLE_TP:-unset}"
sleep 600
EOF
b=$(sbatch --parsable -N1 --gpus=4 --isle-tp=2 -o "$jobs/%j.out" "$jobs/gpus.sh")
isle_pt_wait_state "$b" RUNNING 60 || fail "TP=2 4-GPU job did not start"
idx_b=$(isle_idx_expand "$(gres_of "$b")" | tr , " ")
echo "TP=2 4-GPU job $b: GPUs $idx_b"
[ "$(wc -w <<<"$idx_b")" = 4 ] || fail "job $b got '$idx_b'"
[ "$idx_b" != "3 4 5 6" ] || fail "job $b got 3,4,5,6"
pairs_whole "$idx_b" || fail "job $b splits NVLink pairs: $idx_b"

c=$(sbatch --parsable -N1 --gpus=2 --isle-tp=2 -o "$jobs/%j.out" "$jobs/gpus.sh")
isle_pt_wait_state "$c" RUNNING 60 || fail "TP=2 2-GPU job did not start"
idx_c=$(isle_idx_expand "$(gres_of "$c")" | tr , " ")
echo "TP=2 2-GPU job $c: GPUs $idx_c"
[ "$(wc -w <<<"$idx_c")" = 2 ] && pairs_whole "$idx_c" || fail "job $c is not a linked pair: $idx_c"

for _ in $(seq 1 40); do
	[ -s "$jobs/$b.out" ] && break
	sleep 0.25
done
line=$(cat "$jobs/$b.out")
echo "$line"
[ "$line" = "CVD=$(tr ' ' , <<<"$idx_b") JOB_GPUS=$(tr ' ' , <<<"$idx_b") ISLE_TP=2" ] ||
	fail "task environment does not follow the grant: $line"
scontrol show job "$b" | isle_grep_q "AdminComment=isle: tp=2 pp=1 dp=2" || fail "no isle line for $b"

scancel "$a" "$b" "$c"
echo "PASS"
