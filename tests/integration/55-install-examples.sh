#!/bin/bash
# 55-install-examples: the example files work when copied.
#
# `make install DESTDIR=<stage> PREFIX=/usr/local SLURM_PLUGIN_DIR=<Debian's
# slurm-wlm dir>` into a staging root; then a test cluster whose slurm.conf
# is slurm.conf.example and whose plugstack.conf is
# slurm_plugin/plugstack.conf.example, with only hosts, ports and paths
# substituted (the lines marked "harness:" in the example, and the staging
# root before installed paths), and whose gres.conf is what the installed
# islectl emits (`emit gres --type` from the example's Gres=gpu:TYPE:N).
# Every node must come up (a typed Gres without Type= in gres.conf made
# them INVAL), and two jobs must get plans from the installed agent:
#  1. TP=8 PP=2 over two nodes, one task per GPU: ISLE_PLAN and the
#     installed shim in LD_PRELOAD in every task, isle's AdminComment;
#  2. one task per node on two nodes (pure data parallelism): ISLE_PLAN in
#     both tasks, no "shim off" line;
#  3. an impossible TP (TP x PP not dividing the job's GPUs) is refused at
#     submit with isle's reason on sbatch's stderr (the example's
#     JobSubmitPlugins=isle), and `islectl explain` of the TP job names the
#     GPUs Slurm granted on each node (scontrol -d show job).
# ISLE_INSTALLED_PREFIX=DIR ISLE_INSTALLED_PLUGIN_DIR=DIR: run on an
# installed layout (a package, test 63) instead of `make install` into a
# staging root; the example's /usr/local paths then become DIR's.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$repo/slurm_plugin/testlib.sh"
isle_cluster_require

if [ -z "${ISLE_INSTALLED_PREFIX:-}" ] && [ ! -f "$repo/build/slurm/spank_isle.so" ]; then
	echo "FAIL: isle is not built (make)"
	exit 1
fi
command -v mpicc >/dev/null || { echo "SKIP: no MPI: the example's shim libisle_preload.so backends are not built"; exit 77; }

fail() {
	echo "FAIL: $*"
	isle_cluster_logs 30
	exit 1
}

work=$(mktemp -d "${ISLE_TMPDIR:-${TMPDIR:-/tmp}}/isle-55.XXXXXX")
trap 'rm -rf "$work"' EXIT
example_prefix=/usr/local # the install prefix the example files name
if [ -n "${ISLE_INSTALLED_PREFIX:-}" ]; then
	stage=
	prefix=$ISLE_INSTALLED_PREFIX
	plugin_dir=${ISLE_INSTALLED_PLUGIN_DIR:?with ISLE_INSTALLED_PREFIX}
else
	stage=$work/stage
	prefix=$example_prefix
	plugin_dir=/usr/lib/x86_64-linux-gnu/slurm-wlm
fi

# --- install ----------------------------------------------------------------
# The release of the cluster under test (make test SLURM=26.05 passes it
# down anyway; a test run alone must not rebuild for the default one).
release=$("$ISLE_SLURM_PREFIX/sbin/slurmctld" -V | awk '{split($2, v, "."); print v[1] "." v[2]}')
if [ -n "$stage" ]; then
	make -s -C "$repo" install SLURM="$release" DESTDIR="$stage" PREFIX="$prefix" \
		SLURM_PLUGIN_DIR="$plugin_dir" >"$work/install.log" 2>&1 ||
		{ cat "$work/install.log"; fail "make install into $stage"; }
fi
for f in "$prefix/bin/islectl" "$prefix/bin/isle-agent" "$prefix/lib/isle/libisle_preload.so" \
	"$plugin_dir/topology_isle.so" "$plugin_dir/spank_isle.so" "$plugin_dir/job_submit_isle.so"; do
	[ -f "$stage$f" ] || fail "not installed: $stage$f"
done
if [ -n "$stage" ]; then
	if find "$stage" -path '*/opt/isle/*' | isle_grep_q .; then
		fail "make install wrote into isle's own Slurm: $(find "$stage" -path '*/opt/isle/*' | head -3)"
	fi
	echo "ok: installed into $stage"
else
	echo "ok: installed layout: $prefix, plugins in $plugin_dir"
fi
islectl=$stage$prefix/bin/islectl

# --- the example slurm.conf --------------------------------------------------
example=$repo/slurm.conf.example
node_line=$(grep -m1 '^NodeName=' "$example") || fail "no NodeName line in $example"
val() { sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" <<<"$node_line"; }
cpus=$(val CPUs)
mem=$(val RealMemory)
gres=$(val Gres) # gpu:TYPE:N
IFS=: read -r gres_name gpu_type gpus_per_node <<<"$gres"
[ "$gres_name" = gpu ] && [ -n "$gpu_type" ] && [ -n "$gpus_per_node" ] ||
	fail "the example's node line has no typed Gres=gpu:TYPE:N: $node_line"
echo "example nodes: CPUs=$cpus RealMemory=$mem Gres=gpu:$gpu_type:$gpus_per_node"

# Everything but what only fits one real cluster: hosts, ports, paths, the
# SlurmUser and the cgroup plugins (lines the example marks "harness:"),
# and the node lines (the harness writes them, with the values above).
subst_keys='SlurmctldHost|SlurmctldPort|SlurmdPort|SlurmUser|StateSaveLocation|SlurmdSpoolDir|SlurmctldPidFile|SlurmdPidFile|SlurmctldLogFile|SlurmdLogFile|ProctrackType|TaskPlugin|PluginDir|NodeName|PartitionName'
extra=$(grep -Ev '^[[:space:]]*(#|$)' "$example" | grep -Ev "^[[:space:]]*($subst_keys)[[:space:]]*=") ||
	fail "nothing left of $example"
grep -q '^PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP$' "$example" ||
	fail "the example's partition line is not the harness's (update this test)"

# --- the example plugstack.conf ----------------------------------------------
# Installed paths move under the staging root; the run dir gets one
# directory per slurmd (all on one host).
sed -E -e '/^[[:space:]]*(#|$)/d' \
	-e "s#(shim|agent)=$example_prefix/#\\1=$stage$prefix/#g" \
	-e 's#rundir=[^[:space:]]*#rundir=@DIR@/run/isle/%n#' \
	"$repo/slurm_plugin/plugstack.conf.example" >"$work/plugstack.conf.in"
grep -q '^required spank_isle\.so ' "$work/plugstack.conf.in" ||
	fail "the example plugstack.conf does not load spank_isle.so from PluginDir: $(cat "$work/plugstack.conf.in")"

# --- cluster file and gres.conf from the installed islectl ---------------------
nodes=4
cat >"$work/over.json" <<EOF
{"name": "examples",
 "tiers": {"spine": {"oversub": 2}},
 "nodes": [{"name": "gpu[01-$(printf %02d $nodes)]", "gpus": $gpus_per_node, "nvlink_all": 18}],
 "racks": [{"name": "rack1", "nodes": ["gpu[01-02]"]}, {"name": "rack2", "nodes": ["gpu[03-04]"]}],
 "switches": [{"name": "spine", "level": "spine", "switches": ["leaf1", "leaf2"]},
              {"name": "leaf1", "level": "leaf", "nodes": ["gpu[01-02]"]},
              {"name": "leaf2", "level": "leaf", "nodes": ["gpu[03-04]"]}]}
EOF
"$islectl" build --overrides "$work/over.json" -o "$work/isle.json" 2>"$work/build.log" ||
	{ cat "$work/build.log"; fail "islectl build"; }
"$islectl" emit gres --dev-dir @DEVDIR@ --cores "0-$((cpus - 1))" --type "$gpu_type" \
	-o "$work/gres.conf" "$work/isle.json" || fail "islectl emit gres --type"
grep -q "^NodeName=gpu01 Name=gpu Type=$gpu_type File=@DEVDIR@/nvidia0 Cores=" "$work/gres.conf" ||
	fail "gres.conf: $(head -3 "$work/gres.conf")"

isle_cluster_start --nodes "$nodes" --node-prefix gpu --gpus "$gpus_per_node" \
	--gpu-type "$gpu_type" --cpus "$cpus" --mem "$mem" \
	--plugin-dir "$stage$plugin_dir" --gres-conf "$work/gres.conf" \
	--plugstack "$work/plugstack.conf.in" --etc-file "$work/isle.json" \
	--topology isle --slurm-extra "$extra" ||
	fail "cluster from the example files did not start"
jobs=$ISLE_CLUSTER_DIR/jobs
bad=$(sinfo -h -N -o '%N %T' | grep -Eiv ' (idle|mixed|allocated)$' || true)
[ -z "$bad" ] || fail "nodes not usable: $bad"
echo "ok: $nodes nodes up on the example slurm.conf"

job() { # name sbatch-args...
	local name=$1 j state
	shift
	cat >"$jobs/$name.sh" <<'EOF'
#!/bin/bash
srun bash -c 'echo "TASK $SLURM_PROCID $SLURMD_NODENAME plan=${ISLE_PLAN:-unset} preload=${LD_PRELOAD:-}"'
EOF
	chmod +x "$jobs/$name.sh"
	j=$(sbatch --parsable --chdir="$jobs" "$@" -o "$jobs/$name.out" -e "$jobs/$name.err" \
		"$jobs/$name.sh") || fail "$name: sbatch failed"
	state=$(isle_wait_job "$j" 90) || { cat "$jobs/$name.out" "$jobs/$name.err"; fail "$name: job $j ended $state"; }
	echo "$j" >"$jobs/$name.id"
}
plans() { grep -c '^TASK .* plan=/[^ ]*/plan\.json ' "$jobs/$1.out" || true; }

job tp -N2 --gpus-per-node="$gpus_per_node" --ntasks-per-node="$gpus_per_node" \
	--isle-tp="$gpus_per_node" --isle-pp=2
want=$((2 * gpus_per_node))
[ "$(plans tp)" = "$want" ] || { cat "$jobs/tp.out" "$jobs/tp.err"; fail "tp: $(plans tp) of $want tasks got ISLE_PLAN"; }
[ "$(grep -c "^TASK .*preload=.*$stage$prefix/lib/isle/libisle_preload.so" "$jobs/tp.out")" = "$want" ] ||
	fail "tp: the installed shim is not in every task's LD_PRELOAD"
comment=$(scontrol show job "$(cat "$jobs/tp.id")" | grep -o 'AdminComment=.*' || true)
[[ $comment == "AdminComment=isle: tp=$gpus_per_node pp=2 "* ]] || fail "tp: '$comment'"
echo "ok: TP job: $want tasks with the plan and the shim; $comment"

job dp -N2 --gpus-per-node=1 --ntasks-per-node=1
[ "$(plans dp)" = 2 ] || { cat "$jobs/dp.out" "$jobs/dp.err"; fail "dp: $(plans dp) of 2 tasks got ISLE_PLAN"; }
if grep -q 'isle: shim off' "$jobs/dp.err"; then fail "dp: $(grep 'isle: shim off' "$jobs/dp.err")"; fi
echo "ok: one task per node: both tasks with the plan"


if out=$(sbatch --parsable -N2 --gpus-per-node="$gpus_per_node" --isle-tp=3 -o /dev/null --wrap true 2>&1); then
	fail "impossible TP accepted as job $out"
fi
echo "$out" | isle_grep_q "sbatch: error: isle: --isle-tp=3 .*does not divide the job's $((2 * gpus_per_node)) GPUs" ||
	fail "impossible TP: no isle reason at submit: $out"
echo "ok: impossible TP refused at submit: $(echo "$out" | grep -m1 'isle:')"

# explain of a running TP job against the GRES indices Slurm granted on
# each node.
j2=$(sbatch --parsable -N2 --gpus-per-node="$gpus_per_node" --isle-tp="$gpus_per_node" \
	-o /dev/null --wrap "sleep 300") || fail "sbatch for explain"
for _ in $(seq 240); do
	[ "$(squeue -h -j "$j2" -o %T)" = RUNNING ] && [ -f "$ISLE_CLUSTER_DIR/state/isle/job_$j2.json" ] && break
	sleep 0.5
done
granted=$("$islectl" explain --state-dir "$ISLE_CLUSTER_DIR/state" "$j2" | grep '^Granted:') ||
	fail "islectl explain $j2: no Granted line"
nn=0
while read -r nodes idx; do
	[ -n "$idx" ] || fail "job $j2: no GRES index on $nodes"
	for node in $(scontrol show hostnames "$nodes"); do
		nn=$((nn + 1))
		echo "$granted" | isle_grep_q -F " $node GPUs $idx;" ||
			fail "job $j2: Slurm granted $node GPUs $idx, explain says: $granted"
	done
done < <(isle_job_gres_idx "$j2")
[ "$nn" = 2 ] || fail "job $j2: $nn nodes with GRES in scontrol -d show job"
echo "ok: explain $j2 matches Slurm's GRES: $granted"
scancel "$j2"

# The emitted gres.conf has Cores=: no warning about it.
if grep -q "gives its GPUs no Cores=" "$ISLE_CLUSTER_DIR/log/slurmctld.log"; then
	fail "gres.conf with Cores= warned: $(grep -m1 'no Cores=' "$ISLE_CLUSTER_DIR/log/slurmctld.log")"
fi

isle_cluster_stop
echo "PASS"
