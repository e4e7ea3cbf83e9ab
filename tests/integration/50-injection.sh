#!/bin/bash
# 50-injection: the per-job plan on a live cluster (spank_isle.so + isle-agent).
#
# 4 slurmd x 4 fake GPUs; cluster file with NVLink domains n[01-02] and
# n[03]; n04 is missing from it on purpose. The job runs as the unprivileged
# user isle-test (created if missing).
#  1. sbatch -N2 --isle-tp=8, one task per GPU: in every task ISLE_PLAN is set,
#     readable, and its ranks are exactly the granted nodes x GRES indices (in
#     rank order); NCCL_TOPO_FILE parses (xmllint) and describes the node's 4
#     GPUs; NCCL_IB_HCA comes from nccl.env; LD_PRELOAD holds the job's own
#     entry first, then the shim. The run dir and its files are root:root,
#     the job's user reads them through an ACL entry of its own but cannot
#     write there; another user (nobody), and another user of the job's own
#     group, can reach the directory above but cannot read the plan. After
#     the job, the run dir is gone on every node.
#  2. srun --isle-shim=off: no ISLE_PLAN, no shim in LD_PRELOAD; srun -m
#     cyclic (ranks not in the plan's order): no plan, the reason on stderr.
#  3. Bad plan inputs: a job on n04 (not in the cluster file) and a job while
#     the cluster file is missing both complete, with the shim off and the
#     reason in their stderr.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
isle_cluster_require

agent=$repo/build/bin/isle-agent
spank=$repo/build/slurm/spank_isle.so
for f in "$agent" "$spank"; do
	[ -x "$f" ] || [ -f "$f" ] || { echo "FAIL: $f not built (make)"; exit 1; }
done
command -v xmllint >/dev/null || { echo "SKIP: xmllint missing (libxml2-utils)"; exit 77; }
# The real shim if it is built; any harmless library shows the mechanics.
first_file() { for f in "$@"; do [ -f "$f" ] && { echo "$f"; return; }; done; }
shim=$(first_file "$repo/build/lib/libisle_preload.so" /usr/lib/x86_64-linux-gnu/libm.so.6 /lib/x86_64-linux-gnu/libm.so.6)
# An LD_PRELOAD entry of the job's own, which must stay first.
user_lib=$(first_file /usr/lib/x86_64-linux-gnu/libdl.so.2 /lib/x86_64-linux-gnu/libdl.so.2)
[ -n "$shim" ] && [ -n "$user_lib" ] || { echo "SKIP: no library to preload"; exit 77; }

fail() {
	echo "FAIL: $*"
	isle_cluster_logs 30
	exit 1
}

id isle-test >/dev/null 2>&1 || useradd --system --no-create-home \
	--shell /usr/sbin/nologin isle-test || { echo "SKIP: cannot create user isle-test"; exit 77; }
job_uid=$(id -u isle-test)

work=$(mktemp -d "${ISLE_TMPDIR:-${TMPDIR:-/tmp}}/isle-50.XXXXXX")
trap 'rm -rf "$work"' EXIT
cat >"$work/isle.json" <<'EOF'
{"version": 1, "name": "injection",
 "tiers": {"spine": {"oversub": 2}},
 "nodes": [
  {"name": "n01", "rack": "r0", "gpus": 4,
   "nics": [{"name": "mlx5_0", "rail": 0, "switch": "leaf0", "gbps": 400},
            {"name": "mlx5_1", "rail": 1, "switch": "leaf0", "gbps": 400}]},
  {"name": "n02", "rack": "r0", "gpus": 4,
   "nics": [{"name": "mlx5_0", "rail": 0, "switch": "leaf0", "gbps": 400},
            {"name": "mlx5_1", "rail": 1, "switch": "leaf0", "gbps": 400}]},
  {"name": "n03", "rack": "r1", "gpus": 4,
   "nics": [{"name": "mlx5_0", "rail": 0, "switch": "leaf1", "gbps": 400}]}
 ],
 "domains": [{"name": "nvl-r0", "nodes": ["n[01-02]"], "bw_gbps": 900}],
 "switches": [{"name": "spine0", "level": "spine", "switches": ["leaf0", "leaf1"]},
              {"name": "leaf0", "level": "leaf"}, {"name": "leaf1", "level": "leaf"}]}
EOF
cat >"$work/plugstack.conf" <<EOF
required $spank agent=$agent cluster=@ETC@/isle.json rundir=@DIR@/run/isle/%n shim=$shim
EOF

isle_cluster_start --nodes 4 --gpus 4 --plugstack "$work/plugstack.conf" \
	--etc-file "$work/isle.json" || fail "cluster did not start"
jobs=$ISLE_CLUSTER_DIR/jobs
cluster_file=$ISLE_CLUSTER_DIR/etc/isle.json
# Another user may walk down to the run dirs: only isle's modes protect them.
chmod 0755 "$ISLE_CLUSTER_DIR"
chmod 1777 "$jobs"
rundir_of() { echo "$ISLE_CLUSTER_DIR/run/isle/$1"; }

# sbatch as isle-test when this Slurm allows it (root only), else as root.
as_user=(--uid=isle-test)
sbatch "${as_user[@]}" --chdir=/tmp --wrap true -o /dev/null >/dev/null 2>&1 || { as_user=(); job_uid=0; }
echo "jobs run as uid $job_uid"

# --- 1. a TP=8 job over two nodes ----------------------------------------
cat >"$jobs/tp8.sh" <<EOF
#!/bin/bash
export LD_PRELOAD=$user_lib
srun bash -c 'printf "TASK %s %s plan=%s topo=%s hca=%s preload=%s\n" \
	"\$SLURM_PROCID" "\$SLURMD_NODENAME" "\${ISLE_PLAN:-unset}" \
	"\${NCCL_TOPO_FILE:-unset}" "\${NCCL_IB_HCA:-unset}" "\${LD_PRELOAD:-}";
	if [ -r "\$ISLE_PLAN" ]; then cp "\$ISLE_PLAN" "$jobs/plan.\$SLURM_PROCID"; fi
	if [ -r "\$NCCL_TOPO_FILE" ]; then cp "\$NCCL_TOPO_FILE" "$jobs/topo.\$SLURM_PROCID"; fi'
srun --isle-shim=off bash -c 'echo "OFF \$SLURM_PROCID plan=\${ISLE_PLAN:-unset} preload=\${LD_PRELOAD:-}"'
srun -m cyclic bash -c 'echo "CYCLIC \$SLURM_PROCID plan=\${ISLE_PLAN:-unset}"'
touch "$jobs/tp8.running"
for i in \$(seq 120); do [ -e "$jobs/tp8.release" ] && break; sleep 0.5; done
EOF
chmod +x "$jobs/tp8.sh"
job=$(sbatch "${as_user[@]}" --chdir="$jobs" --parsable -N2 --gpus-per-node=4 --ntasks-per-node=4 \
	--isle-tp=8 -o "$jobs/tp8.out" -e "$jobs/tp8.err" "$jobs/tp8.sh") || fail "sbatch --isle-tp=8 failed"
for _ in $(seq 120); do [ -e "$jobs/tp8.running" ] && break; sleep 0.5; done
[ -e "$jobs/tp8.running" ] || { touch "$jobs/tp8.release"; isle_wait_job "$job" 30 || true; cat "$jobs/tp8.out" "$jobs/tp8.err" 2>/dev/null; fail "job $job never reached its checks"; }

nodes=$(isle_job_field "$job" NodeList)
# The job's group (its tasks run with it): GroupId=name(gid).
job_gid=$(isle_job_field "$job" GroupId | sed -n 's/.*(\([0-9]*\))$/\1/p')
[ -n "$job_gid" ] || fail "no GroupId for job $job"
mapfile -t granted < <(isle_job_gres_idx "$job")
echo "job $job on $nodes; GRES: ${granted[*]}"
[ "${#granted[@]}" -ge 1 ] || fail "no per-node GRES for job $job"

# Expected ranks: nodes in hostlist order, GPUs ascending ("node gpu" lines).
expected=$(for line in "${granted[@]}"; do
	read -r spec idx <<<"$line"
	for n in $(scontrol show hostnames "$spec"); do
		IFS=, read -r -a parts <<<"$idx"
		for p in "${parts[@]}"; do
			if [[ $p == *-* ]]; then seq "${p%-*}" "${p#*-}"; else echo "$p"; fi
		done | sort -n | sed "s/^/$n /"
	done
done | sort -k1,1 -s)

# Permissions, while the job runs.
for n in $(scontrol show hostnames "$nodes"); do
	d=$(rundir_of "$n")/$job
	[ -d "$d" ] || fail "$d missing while job $job runs"
	# Group bits are the ACL mask when the job's user has an entry.
	if [ "$job_uid" != 0 ]; then want_d=750 want_f=640; else want_d=700 want_f=600; fi
	read -r mode owner group <<<"$(stat -c '%a %u %g' "$d")"
	[ "$mode" = "$want_d" ] && [ "$owner" = 0 ] && [ "$group" = 0 ] ||
		fail "$d: mode $mode owner $owner:$group (want $want_d 0:0)"
	for f in plan.json nccl.env nccl-topo.xml; do
		[ -f "$d/$f" ] && [ ! -L "$d/$f" ] || fail "$d/$f missing"
		read -r mode owner group <<<"$(stat -c '%a %u %g' "$d/$f")"
		[ "$mode" = "$want_f" ] && [ "$owner" = 0 ] && [ "$group" = 0 ] ||
			fail "$d/$f: mode $mode owner $owner:$group (want $want_f 0:0)"
	done
	chmod 0755 "$ISLE_CLUSTER_DIR/run" "$ISLE_CLUSTER_DIR/run/isle"
	if [ "$job_uid" != 0 ]; then
		# As the job's tasks run: its uid and gid.
		as_job=(setpriv --reuid="$job_uid" --regid="$job_gid" --clear-groups --)
		"${as_job[@]}" cat "$d/plan.json" >/dev/null ||
			fail "the job's user cannot read $d/plan.json"
		if "${as_job[@]}" mkdir "$d/mine" 2>/dev/null ||
			"${as_job[@]}" sh -c "echo x >>'$d/plan.json'" 2>/dev/null; then
			fail "the job's user can write in $d"
		fi
		# The group is no boundary: another user of the job's group.
		peer=(setpriv --reuid=$((job_uid == 65533 ? 65532 : 65533)) --regid="$job_gid" --clear-groups --)
		"${peer[@]}" test -x "$(rundir_of "$n")" || fail "a peer cannot reach $(rundir_of "$n") (test setup)"
		if "${peer[@]}" cat "$d/plan.json" >/dev/null 2>&1 ||
			"${peer[@]}" ls "$d" >/dev/null 2>&1; then
			fail "another user of the job's group (gid $job_gid) can read $d"
		fi
	fi
	runuser -u nobody -- test -x "$(rundir_of "$n")" || fail "nobody cannot reach $(rundir_of "$n") (test setup)"
	if runuser -u nobody -- cat "$d/plan.json" >/dev/null 2>&1; then
		fail "user nobody can read $d/plan.json"
	fi
	if runuser -u nobody -- ls "$d" >/dev/null 2>&1; then
		fail "user nobody can list $d"
	fi
done
touch "$jobs/tp8.release"
state=$(isle_wait_job "$job" 90) || { cat "$jobs/tp8.out" "$jobs/tp8.err"; fail "job $job ended $state"; }
cat "$jobs/tp8.out"

ntasks=$(grep -c '^TASK ' "$jobs/tp8.out" || true)
[ "$ntasks" = 8 ] || fail "expected 8 tasks, saw $ntasks"
while read -r _ rank node plan topo hca preload; do
	[ "$plan" = "plan=$(rundir_of "$node")/$job/plan.json" ] || fail "task $rank on $node: $plan"
	[ "$topo" = "topo=$(rundir_of "$node")/$job/nccl-topo.xml" ] || fail "task $rank on $node: $topo"
	[ "$hca" = "hca==mlx5_0,mlx5_1" ] || fail "task $rank on $node: NCCL_IB_HCA $hca"
	[ "$preload" = "preload=$user_lib:$shim" ] || fail "task $rank on $node: LD_PRELOAD '${preload#preload=}' (want the job's entry, then $shim)"
	[ -f "$jobs/plan.$rank" ] || fail "task $rank could not read its plan"
	got=$(grep -o '"node": "[^"]*", "gpu": [0-9]*' "$jobs/plan.$rank" |
		sed 's/"node": "\([^"]*\)", "gpu": \([0-9]*\)/\1 \2/')
	[ "$got" = "$expected" ] || fail "task $rank: plan ranks
$got
want (granted nodes x GPUs)
$expected"
	grep -q "\"rank\": $rank, \"node\": \"$node\"," "$jobs/plan.$rank" ||
		fail "task $rank runs on $node, but its plan puts rank $rank elsewhere"
	grep -q '"isle_plan": 1' "$jobs/plan.$rank" || fail "task $rank: not a version 1 plan"
	xmllint --noout "$jobs/topo.$rank" || fail "task $rank: NCCL topology file does not parse"
	[ "$(grep -c '<gpu ' "$jobs/topo.$rank")" = 4 ] || fail "task $rank: NCCL topology lacks the node's 4 GPUs"
done < <(grep '^TASK ' "$jobs/tp8.out")
echo "ok: 8 tasks, plans match granted nodes and GPUs"

[ "$(grep -c '^OFF .* plan=unset' "$jobs/tp8.out")" = 8 ] || fail "--isle-shim=off step still got ISLE_PLAN"
if grep '^OFF ' "$jobs/tp8.out" | isle_grep_q -F "$shim"; then fail "--isle-shim=off step still preloads $shim"; fi
echo "ok: --isle-shim=off"
[ "$(grep -c '^CYCLIC .* plan=unset' "$jobs/tp8.out")" = 8 ] || fail "a cyclic step got the (block) plan"
grep -q "isle: shim off for job $job on .*distribution=cyclic" "$jobs/tp8.err" ||
	fail "no reason for the cyclic step in the job's stderr"
echo "ok: a step in another rank layout runs without the plan, and says why"

gone() { # node job: wait for the epilog to remove the run dir
	for _ in $(seq 40); do [ -e "$(rundir_of "$1")/$2" ] || return 0; sleep 0.25; done
	return 1
}
for n in $(scontrol show hostnames "$nodes"); do
	gone "$n" "$job" || fail "$(rundir_of "$n")/$job still there after the job ended"
done
echo "ok: run dirs removed"

# --- 3. bad plan inputs ---------------------------------------------------
bad_job() { # name expected-reason sbatch-args...
	local name=$1 want=$2 j
	shift 2
	cat >"$jobs/$name.sh" <<'EOF'
#!/bin/bash
srun bash -c 'echo "TASK $SLURM_PROCID plan=${ISLE_PLAN:-unset} preload=${LD_PRELOAD:-}"'
EOF
	chmod +x "$jobs/$name.sh"
	j=$(sbatch "${as_user[@]}" --chdir="$jobs" --parsable "$@" -o "$jobs/$name.out" -e "$jobs/$name.err" \
		"$jobs/$name.sh") || fail "$name: sbatch failed"
	state=$(isle_wait_job "$j" 60) || { cat "$jobs/$name.out" "$jobs/$name.err"; fail "$name: job $j ended $state (must still run)"; }
	grep -q "^TASK .* plan=unset" "$jobs/$name.out" || fail "$name: tasks got a plan"
	if grep -qF "$shim" "$jobs/$name.out"; then fail "$name: shim preloaded"; fi
	grep -q "isle: shim off for job $j on .*$want" "$jobs/$name.err" ||
		{ cat "$jobs/$name.err"; fail "$name: reason '$want' not in the job's stderr"; }
	echo "ok: $name: $(grep -m1 'isle: shim off' "$jobs/$name.err")"
}
bad_job unknown-node "node 'n04' is not in the cluster file" \
	-N1 -w n04 --gpus-per-node=4 --ntasks-per-node=4 --isle-tp=4
mv "$cluster_file" "$cluster_file.away"
bad_job no-cluster-file "No such file or directory" \
	-N1 -w n01 --gpus-per-node=4 --ntasks-per-node=4 --isle-tp=4
mv "$cluster_file.away" "$cluster_file"

isle_cluster_stop
echo "PASS"
