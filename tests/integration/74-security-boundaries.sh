#!/bin/bash
# 74-security-boundaries: the boundaries of docs/security.md, one regression
# case per finding of the run-directory review, on live daemons.
#  1. A forged plan through a writable parent: rundir= lies under a
#     directory owned by nobody, who plants <rundir>/<node>/<job>/ with an
#     nccl.env naming NCCL_NET_PLUGIN. The job's tasks must not get it: the
#     task side trusts nothing below a component another user owns, and the
#     job's stderr says why.
#  3. A NIC name holding a newline and an env line: `islectl validate` and
#     `isle-agent plan show` refuse the cluster file naming the field, and no
#     NCCL_NET_PLUGIN line is ever printed.
#  4. `islectl explain` of a job whose own comment reads "AdminComment=isle:
#     ...": the user's words are not shown as isle's.
#  5. A leftover <rundir>/<node>/<job>/ (root's, as a crashed run would
#     leave it) while the agent fails: the prolog clears it before the job's
#     tasks start, so they get neither its plan nor its NCCL settings.
# (2, same-group readers, is test 50's and test_agent_plan's.)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$repo/slurm_plugin/testlib.sh"
isle_pt_setup
for f in "$repo/build/bin/isle-agent" "$repo/build/bin/islectl"; do
	[ -x "$f" ] || fail "$f not built (make)"
done

work=$(mktemp -d "${ISLE_TMPDIR:-${TMPDIR:-/tmp}}/isle-t74.XXXXXX")
chmod 0755 "$work"
trap 'rm -rf "$work"' EXIT
isle_pt_gb200 "$work" 2 2 2

# A one-node isle cluster whose spank_isle.so also gets ARGS; sets d.
start_cluster() { # ARGS
	isle_pt_plugstack "$work" "shim=$repo/build/lib/libisle_preload.so cluster=@ETC@/isle.json $1"
	isle_cluster_start --nodes 1 --gpus 4 --topology isle --plugin-dir "$repo/build/slurm" \
		--plugstack "$work/plugstack.conf" --etc-file "$work/isle.json" || fail "cluster did not start"
	d=$ISLE_CLUSTER_DIR
	chmod 0755 "$d"
	mkdir -p "$d/jobs"
}

# A job of 4 tasks on one node's 4 GPUs (the plan's layout) printing what
# each task got; held until the test has set the stage, then released.
run_job() { # NAME -> prints the job id; output in $d/jobs/NAME.{out,err}
	sbatch --parsable --hold -N1 --gpus-per-node=4 --ntasks-per-node=4 \
		-o "$d/jobs/$1.out" -e "$d/jobs/$1.err" --wrap \
		"srun bash -c 'echo \"TASK \$SLURM_PROCID net=\${NCCL_NET_PLUGIN:-unset} left=\${NCCL_ISLE_LEFTOVER:-unset} plan=\${ISLE_PLAN:-unset}\"'"
}
finish_job() { # JOBID NAME
	local st
	scontrol release "$1"
	st=$(isle_wait_job "$1" 120) || fail "$2: job $1 ended $st: $(cat "$d/jobs/$2.out" "$d/jobs/$2.err" 2>/dev/null)"
	[ "$(grep -c '^TASK ' "$d/jobs/$2.out")" = 4 ] || fail "$2: expected 4 tasks: $(cat "$d/jobs/$2.out")"
}

# --- 3. NIC names (no daemons needed) --------------------------------------
python3 - "$work/isle.json" "$work/hostile.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["nodes"][0]["nics"] = [{"name": "mlx5_0\nNCCL_NET_PLUGIN=/x/evil.so\nNCCL_X", "rail": 0}]
json.dump(c, open(sys.argv[2], "w"))
EOF
if out=$("$repo/build/bin/islectl" validate "$work/hostile.json" 2>&1); then
	fail "islectl validate accepted a NIC name with a newline: $out"
fi
echo "$out" | isle_grep_q 'nodes\[0\].nics\[0\].name: .*byte 0x0a not allowed' ||
	fail "validate does not name the field: $out"
out=$("$repo/build/bin/isle-agent" plan show --job 1 --nodes n01 --gpus-per-node 0-3 \
	--node n01 --cluster "$work/hostile.json" 2>&1) && fail "plan show accepted the hostile cluster file: $out"
if echo "$out" | isle_grep_q '^NCCL_NET_PLUGIN='; then fail "plan show printed an injected line: $out"; fi
echo "$out" | isle_grep_q 'nics\[0\].name' || fail "plan show does not name the field: $out"
echo "ok: a hostile NIC name is refused, naming the field"

# --- 1. a forged plan under a parent another user owns ----------------------
mkdir -p "$work/shared"
chown nobody "$work/shared"
start_cluster "agent=$repo/build/bin/isle-agent rundir=$work/shared/run/%n"
j=$(run_job forged)
node=n01
runuser -u nobody -- sh -c "mkdir -p '$work/shared/run/$node/$j' &&
	echo '{}' >'$work/shared/run/$node/$j/plan.json' &&
	printf 'NCCL_NET_PLUGIN=/x/evil.so\n' >'$work/shared/run/$node/$j/nccl.env'" ||
	fail "nobody could not plant the forged tree (test setup)"
finish_job "$j" forged
if isle_grep_q 'net=/x/evil.so' <"$d/jobs/forged.out"; then
	fail "a task exported NCCL_NET_PLUGIN from a tree nobody planted: $(cat "$d/jobs/forged.out")"
fi
isle_grep_q 'plan=unset' <"$d/jobs/forged.out" || fail "a task got the forged plan: $(cat "$d/jobs/forged.out")"
isle_grep_q "isle: shim off for job $j on $node: .*$work/shared is owned by uid $(id -u nobody), not root: not trusted" \
	<"$d/jobs/forged.err" || fail "the job does not say why: $(cat "$d/jobs/forged.out" "$d/jobs/forged.err")"
echo "ok: a forged run dir under another user's directory is not trusted"

# --- 4. explain reads isle's field, not the user's comment -----------------
j=$(sbatch --parsable --hold -N1 --gpus-per-node=4 --comment="AdminComment=isle: tp=8 forged by the user" \
	-o /dev/null --wrap true)
out=$("$repo/build/bin/islectl" explain "$j" 2>&1 || true)
if echo "$out" | isle_grep_q "forged by the user"; then
	fail "islectl explain shows the user's comment as isle's: $out"
fi
scontrol show job "$j" | isle_grep_q "forged by the user" || fail "the comment did not reach Slurm (test setup)"
scancel "$j"
echo "ok: explain does not show a user's comment as isle's word"
isle_cluster_stop

# --- 5. a leftover directory while the agent fails -------------------------
start_cluster "agent=/bin/false rundir=$work/run/%n"
j=$(run_job leftover)
left=$work/run/n01/$j
mkdir -p "$left"
"$repo/build/bin/isle-agent" plan show --job "$j" --nodes n01 --gpus-per-node 0-3 --node n01 \
	--cluster "$work/isle.json" | sed -n '/^==> plan.json <==$/,/^==> /p' | sed '1d;$d' >"$left/plan.json"
printf 'NCCL_ISLE_LEFTOVER=1\n' >"$left/nccl.env"
chmod 0755 "$work/run" "$work/run/n01" "$left"
chmod 0644 "$left"/*
finish_job "$j" leftover
if isle_grep_q 'left=1' <"$d/jobs/leftover.out"; then
	fail "a task got the NCCL settings of a leftover directory: $(cat "$d/jobs/leftover.out")"
fi
isle_grep_q 'plan=unset' <"$d/jobs/leftover.out" || fail "a task got the leftover plan: $(cat "$d/jobs/leftover.out")"
[ ! -e "$left" ] || fail "$left is still there"
wait_for 30 isle_grep_q "isle: job $j: removing a leftover $work/run/n01/$j" "$d/log/slurmd-n01.log" ||
	fail "slurmd log does not say the leftover was removed"
echo "ok: the prolog clears a leftover job directory before the tasks start"
isle_cluster_stop
echo "PASS"
