#!/bin/bash
# 44-comm-preload-spank: the shim as the SPANK plugin injects it (no
# LD_PRELOAD set by hand), one job of 2 nodes x 2 fake GPUs, --isle-tp=2,
# shim=<dir>/libisle_preload.so with its backends beside it:
#  1. MPICH: build/tests/comm_mpi_check_mpich (mpicc.mpich) under
#     `srun --mpi=pmi2`: codec none bit-identical to its own PMPI_Allreduce,
#     and engaged on the MPICH backend (ISLE_COMM_VERBOSE line);
#  2. Open MPI: build/tests/comm_mpi_check under `srun --mpi=pmix`: the same,
#     on the Open MPI backend;
#  3. a step without MPI: the preload library is in LD_PRELOAD and mapped,
#     nothing else of isle's, no MPI library, nothing printed;
#  4. a container-like step: a test SPANK plugin listed before isle's hides
#     the shim's directory in the task's mount namespace (a tmpfs over it, in
#     slurm_spank_task_init, where pyxis enters the container): no ld.so
#     "cannot be preloaded" error, the program runs and passes, one notice;
#  5. the MPICH backend removed from the shim's directory: the MPICH step
#     still passes, through MPI's own allreduce, and says so once per rank.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$repo/slurm_plugin/testlib.sh"
isle_cluster_require

agent=$repo/build/bin/isle-agent
spank=$repo/build/slurm/spank_isle.so
CHECK=$repo/build/tests/comm_mpi_check
CHECK_MPICH=$repo/build/tests/comm_mpi_check_mpich
command -v mpicc.openmpi >/dev/null || command -v mpicc >/dev/null ||
	{ echo "SKIP: no Open MPI (mpicc): the shim's MPI part is not made here (libopenmpi-dev)"; exit 77; }
command -v mpicc.mpich >/dev/null ||
	{ echo "SKIP: no MPICH (mpicc.mpich): its shim backend is not made here (libmpich-dev)"; exit 77; }
for f in "$agent" "$spank" "$CHECK" "$CHECK_MPICH" "$repo/build/lib/libisle_preload.so" \
	"$repo/build/lib/libisle_mpi_mpich.so" "$repo/build/lib/libisle_mpi_ompi.so"; do
	[ -e "$f" ] || { echo "FAIL: $f not built (make)"; exit 1; }
done
for p in mpi_pmi2.so mpi_pmix.so; do
	[ -e "$ISLE_SLURM_PREFIX/lib/slurm/$p" ] || { echo "SKIP: Slurm without $p"; exit 77; }
done
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }

fails=0
bad() {
	echo "FAIL $*"
	fails=$((fails + 1))
}
die() {
	echo "FAIL: $*"
	isle_cluster_logs 30
	exit 1
}

work=$(mktemp -d "${ISLE_TMPDIR:-${TMPDIR:-/tmp}}/isle-44.XXXXXX")
chmod 0755 "$work"
trap 'rm -rf "$work"' EXIT
shimdir=$work/shim
mkdir -p "$shimdir"
cp "$repo"/build/lib/libisle_preload.so "$repo"/build/lib/libisle_mpi_*.so "$shimdir/"

# The container stand-in: a SPANK plugin that, in task_init, gives the task
# its own mount namespace with ISLE_TEST_HIDE_DIR covered by an empty tmpfs.
cat >"$work/hide.c" <<'EOF'
#define _GNU_SOURCE
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <slurm/spank.h>
SPANK_PLUGIN(isle_test_hide, 1);
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	char dir[4096];

	if (spank_getenv(sp, "ISLE_TEST_HIDE_DIR", dir, sizeof(dir)) != ESPANK_SUCCESS || !dir[0])
		return 0;
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("tmpfs", dir, "tmpfs", 0, "size=64k")) {
		slurm_error("isle_test_hide: %s: %m", dir);
		return -1;
	}
	return 0;
}
EOF
gcc -shared -fPIC -I"$ISLE_SLURM_PREFIX/include" -o "$work/hide.so" "$work/hide.c" ||
	die "cannot build the test SPANK plugin"

isle_pt_leaf "$work/isle.json" preload 2 2
# isle's plugin after the container one, as with pyxis.
cat >"$work/plugstack.conf" <<EOF
required $work/hide.so
required $spank agent=$agent cluster=@ETC@/isle.json rundir=@DIR@/run/isle/%n shim=$shimdir/libisle_preload.so
EOF

isle_cluster_start --nodes 2 --gpus 2 --plugstack "$work/plugstack.conf" \
	--etc-file "$work/isle.json" || die "cluster did not start"
jobs=$ISLE_CLUSTER_DIR/jobs

cat >"$jobs/job.sh" <<EOF
#!/bin/bash
unset LD_PRELOAD ISLE_COMM_CODEC ISLE_COMM_ALGO ISLE_COMM_DISABLE
export ISLE_COMM_TIMEOUT_S=60 ISLE_COMM_VERBOSE=1
# Open MPI between test nodes: TCP over lo; busy ranks yield on 2 cores.
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_mpi_yield_when_idle=1
# A loaded 2-core host now and then fails a task launch (slurmstepd
# "task N launch failed") or Open MPI's TCP wire-up on lo, before any of
# isle's code ran (see 41-comm-srun-pmix.sh): launch again then, up to 3 times.
run() {
	local name=\$1 try rc out=$jobs/\$1.out
	shift
	for try in 1 2 3; do
		timeout 150 srun --kill-on-bad-exit=1 "\$@" >"\$out" 2>&1
		rc=\$?
		[ \$rc = 0 ] && break
		grep -Eq 'task [0-9]+ launch failed|Open MPI failed to TCP connect|Segmentation fault' "\$out" || break
		grep -Eq '^(isle_comm|exact|isle:)' "\$out" && break
		echo "step \$name: launch failed before the shim ran, try \$try" >&2
	done
	echo \$rc >"$jobs/\$name.rc"
}
run mpich --mpi=pmi2 env ISLE_COMM_CODEC=none $CHECK_MPICH exact --sizes 1,1000,100000 --dtype both
run ompi --mpi=pmix env ISLE_COMM_CODEC=none $CHECK exact --sizes 1,1000,100000 --dtype both
run nompi bash -c 'echo "PRELOAD=\$LD_PRELOAD"; python3 -c "import sys; sys.stdout.write(open(\"/proc/self/maps\").read())"'
ISLE_TEST_HIDE_DIR=$shimdir run hidden --mpi=pmi2 env ISLE_COMM_CODEC=none $CHECK_MPICH exact --sizes 1,100000
rm -f $shimdir/libisle_mpi_mpich.so
run nobackend --mpi=pmi2 env ISLE_COMM_CODEC=none $CHECK_MPICH exact --sizes 1,100000
EOF
chmod +x "$jobs/job.sh"
job=$(sbatch --parsable -N2 --gpus-per-node=2 --ntasks-per-node=2 --isle-tp=2 \
	--chdir="$jobs" -o "$jobs/job.out" -e "$jobs/job.err" "$jobs/job.sh") || die "sbatch failed"
isle_wait_job "$job" 900 || { cat "$jobs"/*.out 2>/dev/null | tail -40; die "job $job did not finish"; }

show() { sed 's/^/     /' "$jobs/$1.out" | grep -Ev '^\s*$' | head -${2:-12}; }
rc_of() { cat "$jobs/$1.rc" 2>/dev/null || echo none; }
preload_err() { grep -q 'cannot be preloaded' "$jobs/$1.out"; }

# 1. MPICH under pmi2, injected, engaged on the MPICH backend.
if [ "$(rc_of mpich)" = 0 ] && grep -q '^exact: PASS' "$jobs/mpich.out" &&
	grep -q '^isle_comm: 4 ranks, plan .*, MPICH backend' "$jobs/mpich.out" && ! preload_err mpich; then
	echo "ok   MPICH, srun --mpi=pmi2: exact; $(grep -m1 '^isle_comm: 4 ranks' "$jobs/mpich.out")"
else
	bad "MPICH, srun --mpi=pmi2 (rc $(rc_of mpich))"
	show mpich
fi
# 2. Open MPI under pmix.
if [ "$(rc_of ompi)" = 0 ] && grep -q '^exact: PASS' "$jobs/ompi.out" &&
	grep -q '^isle_comm: 4 ranks, plan .*, Open MPI backend' "$jobs/ompi.out"; then
	echo "ok   Open MPI, srun --mpi=pmix: exact; $(grep -m1 '^isle_comm: 4 ranks' "$jobs/ompi.out")"
else
	bad "Open MPI, srun --mpi=pmix (rc $(rc_of ompi))"
	show ompi
fi
# 3. No MPI: the preload only.
if [ "$(rc_of nompi)" = 0 ] &&
	[ "$(grep -c "^PRELOAD=.*$shimdir/libisle_preload.so" "$jobs/nompi.out")" = 4 ] &&
	grep -q "$shimdir/libisle_preload.so" "$jobs/nompi.out" &&
	! grep -Eq 'libisle_(mpi|nccl)|libmpi|libmpich|^isle' "$jobs/nompi.out"; then
	echo "ok   step without MPI: shim injected in 4 tasks, nothing more loaded, nothing printed"
else
	bad "step without MPI (rc $(rc_of nompi))"
	grep -E '^PRELOAD|isle|libmpi' "$jobs/nompi.out" | head -8 | sed 's/^/     /'
fi
# 4. The shim's directory hidden in the task's mount namespace.
if [ "$(rc_of hidden)" = 0 ] && grep -q '^exact: PASS' "$jobs/hidden.out" && ! preload_err hidden &&
	[ "$(grep -c "is not visible in this step" "$jobs/hidden.out")" = 1 ] &&
	! grep -q '^isle_comm: ' "$jobs/hidden.out"; then
	echo "ok   shim hidden in the step: not injected, runs, $(grep -m1 -o 'isle: shim off.*' "$jobs/hidden.out")"
else
	bad "shim hidden in the step (rc $(rc_of hidden))"
	show hidden
fi
# 5. No MPICH backend: pass-through with a notice.
if [ "$(rc_of nobackend)" = 0 ] && grep -q '^exact: PASS' "$jobs/nobackend.out" &&
	grep -q '^isle: MPICH ABI: no backend .*libisle_mpi_mpich.so: MPI calls pass through unchanged' "$jobs/nobackend.out" &&
	! grep -q '^isle_comm: ' "$jobs/nobackend.out"; then
	echo "ok   MPICH backend missing: exact through MPI, $(grep -m1 '^isle: ' "$jobs/nobackend.out")"
else
	bad "MPICH backend missing (rc $(rc_of nobackend))"
	show nobackend
fi

if [ $fails -ne 0 ]; then
	sed 's/^/job: /' "$jobs/job.out" "$jobs/job.err" 2>/dev/null | tail -10
	isle_cluster_logs 10
fi
[ $fails = 0 ] && echo "44-comm-preload-spank: PASS" || echo "44-comm-preload-spank: $fails FAILED"
[ $fails = 0 ]
