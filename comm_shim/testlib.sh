# shellcheck shell=bash
# comm_shim/testlib.sh: the preamble of the shim's local MPI tests
# (tests/integration/4x-comm-*.sh run with mpirun on this host, no Slurm).
#
#   isle_comm_local_setup TAG   cd to the repo; sets B, CHECK (the MPI check
#       program) and SHIM (libisle_preload.so); exits 77 without mpirun or
#       Open MPI's compiler, 1 when either is not built; exports Open MPI's
#       settings for one host as root (shared memory only, oversubscribed);
#       makes the scratch dir T (/tmp/isle-TAG-*), removed at exit unless
#       KEEP is set.
#   isle_comm_srun_require     for the tests that run the shim under srun
#       (tests/cluster/cluster.sh sourced first): sets CHECK and SHIM, exits
#       77 without Open MPI's compiler or Slurm's PMIx (mpi_pmix.so), 1 when
#       either is not built.

# The MPI test program is made where Open MPI's compiler is (comm_shim/module.mk).
isle__comm_require_built() {
	command -v mpicc.openmpi >/dev/null || command -v mpicc >/dev/null ||
		{ echo "SKIP: no Open MPI (mpicc): the shim's MPI part is not made here (libopenmpi-dev)"; exit 77; }
	if [ ! -x "$CHECK" ] || [ ! -f "$SHIM" ]; then
		echo "FAIL: $CHECK or $SHIM not built (make)"
		exit 1
	fi
}

isle_comm_local_setup() {
	cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
	B=build
	CHECK=$B/tests/comm_mpi_check
	SHIM=$PWD/$B/lib/libisle_preload.so
	command -v mpirun >/dev/null || { echo "SKIP: mpirun not installed"; exit 77; }
	isle__comm_require_built
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	export OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1
	export OMPI_MCA_btl_vader_single_copy_mechanism=none
	T=$(mktemp -d "/tmp/isle-$1-XXXXXX")
	trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
}

isle_comm_srun_require() {
	local repo
	repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	CHECK=$repo/build/tests/comm_mpi_check
	SHIM=$repo/build/lib/libisle_preload.so
	isle__comm_require_built
	[ -e "$ISLE_SLURM_PREFIX/lib/slurm/mpi_pmix.so" ] ||
		{ echo "SKIP: Slurm built without PMIx (no mpi_pmix.so)"; exit 77; }
}
