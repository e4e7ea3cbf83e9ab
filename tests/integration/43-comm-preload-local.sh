#!/bin/bash
# 43-comm-preload-local: libisle_preload.so, the one library the SPANK plugin
# preloads, outside Slurm (mpirun / mpiexec on this host):
#  1. it needs nothing beyond libc, libm, libdl, libpthread (readelf); the
#     NCCL backend needs neither libcudart nor libnccl;
#  2. a process that never calls MPI or NCCL loads nothing more (its maps
#     hold no backend, no libmpi) and prints nothing, even when verbose;
#  3. NCCL without a usable CUDA runtime: a program on a stand-in libnccl
#     (no GPU here) gets its own NCCL's results and one notice: no CUDA
#     runtime at all; a CUDA 12 runtime (stand-in) against the CUDA 13
#     backend; with the real CUDA runtime linked, the backend loads (its
#     CUDA symbols bind to the program's runtime) and, finding the stand-in
#     NCCL incomplete, steps aside;
#     An MPI of neither family (stand-in library): its calls run, one notice;
#  4. the same MPI test program built with Open MPI and with MPICH: codec
#     none bit-identical to the library's own PMPI_Allreduce, and engaged on
#     the matching backend (ISLE_COMM_VERBOSE line);
#  5. the MPICH backend hidden (the preload library alone in a directory):
#     results still exact, one notice saying why, the shim not engaged;
#     asked for compression, the notice comes without ISLE_COMM_VERBOSE;
#     LD_PRELOAD naming a link to the library still finds the backends;
#  6. counts that differ across ranks (one rank passes N+1 or N-1): the job
#     ends at once with the size named (MPI_ERR_TRUNCATE), not after the
#     timeout and never with a sum, under both MPIs;
#  7. processes outside MPI_COMM_WORLD: MPI_Comm_spawn + MPI_Intercomm_merge
#     with a plan for the parent job; allreduce on the merged communicator
#     bit-identical on parents and children (Open MPI; Debian's MPICH cannot
#     spawn under mpiexec here).
set -u
cd "$(dirname "$0")/../.."
B=build
PRE=$PWD/$B/lib/libisle_preload.so
CHECK=$PWD/$B/tests/comm_mpi_check
CHECK_MPICH=$PWD/$B/tests/comm_mpi_check_mpich

[ -f "$PRE" ] || { echo "FAIL: $PRE not built (make)"; exit 1; }
command -v readelf >/dev/null || { echo "SKIP: readelf missing"; exit 77; }
T=$(mktemp -d /tmp/isle-43-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
ok() { echo "ok   $*"; }
bad() {
	echo "FAIL $*"
	fails=$((fails + 1))
}
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

# --- 1. dependencies --------------------------------------------------------
extra=$(needed "$PRE" | grep -Ev '^lib(c|m|dl|pthread)\.so\.[0-9]+$')
[ -z "$extra" ] && ok "libisle_preload.so NEEDED: $(needed "$PRE" | tr '\n' ' ')" ||
	bad "libisle_preload.so needs $extra"
if [ -f $B/lib/libisle_nccl.so ]; then
	if needed $B/lib/libisle_nccl.so | grep -Eq 'lib(cudart|nccl|mpi)'; then
		bad "libisle_nccl.so NEEDED: $(needed $B/lib/libisle_nccl.so | tr '\n' ' ')"
	else
		ok "libisle_nccl.so needs no CUDA runtime, NCCL or MPI"
	fi
fi

# --- 2. a process without MPI or NCCL ---------------------------------------
if command -v python3 >/dev/null; then
	ISLE_COMM_VERBOSE=1 ISLE_COMM_CODEC=int8 LD_PRELOAD=$PRE python3 -c \
		'import sys; sys.stdout.write(open("/proc/self/maps").read())' \
		>"$T/maps" 2>"$T/maps.err"
	if ! grep -q libisle_preload.so "$T/maps"; then
		bad "python3: the preload library is not mapped (test broken)"
	elif grep -Eq 'libisle_(mpi|nccl)|libmpi|libmpich|libcudart|libjson' "$T/maps"; then
		bad "python3 without MPI loaded: $(grep -Eo 'lib(isle_(mpi|nccl)|mpi|mpich|cudart|json)[^ ]*' "$T/maps" | sort -u | tr '\n' ' ')"
	elif [ -s "$T/maps.err" ]; then
		bad "python3 without MPI printed: $(head -3 "$T/maps.err")"
	else
		ok "python3 with the preload: nothing loaded beyond it, nothing printed"
	fi
fi

# --- 3. NCCL passes through without a usable CUDA runtime -------------------
cat >"$T/nccl.c" <<'EOF'
#include <stdio.h>
#include <stddef.h>
int ncclGetVersion(int *v) { *v = 22000; return 0; }
int ncclAllReduce(const void *s, void *r, size_t n, int dt, int op, void *c, void *st)
{ printf("stand-in ncclAllReduce %zu\n", n); return 0; }
int ncclGroupStart(void) { printf("stand-in ncclGroupStart\n"); return 0; }
int ncclGroupEnd(void) { printf("stand-in ncclGroupEnd\n"); return 0; }
int ncclCommDestroy(void *c) { return 0; }
int ncclCommAbort(void *c) { return 0; }
EOF
cat >"$T/cudart12.c" <<'EOF'
int cudaRuntimeGetVersion(int *v) { *v = 12080; return 0; }
EOF
cat >"$T/prog.c" <<'EOF'
#include <stdio.h>
#include <stddef.h>
int ncclAllReduce(const void *, void *, size_t, int, int, void *, void *);
int ncclGroupStart(void);
int ncclGroupEnd(void);
int main(void)
{
	float b[4] = {0};
	int rc = ncclGroupStart();

	rc |= ncclAllReduce(b, b, 4, 7, 0, NULL, NULL);
	rc |= ncclGroupEnd();
	printf("rc %d\n", rc);
	return rc;
}
EOF
mkdir -p "$T/nccl"
# nccl_run NAME EXTRA_LIBS...: builds and runs the program, output in $T/NAME.
nccl_run() {
	local name=$1
	shift
	gcc -o "$T/nccl/$name" "$T/prog.c" -Wl,--no-as-needed -Wl,-rpath,"$T/nccl" \
		-L"$T/nccl" -l:libnccl.so.2 "$@" >"$T/$name" 2>&1 ||
		{ bad "NCCL $name: cannot build the program"; return 1; }
	ISLE_COMM_VERBOSE=1 LD_PRELOAD=$PRE "$T/nccl/$name" >"$T/$name" 2>&1
	return 0
}
# want NAME NOTICE-REGEX DESC
nccl_want() {
	if grep -q '^stand-in ncclGroupStart' "$T/$1" && grep -q '^stand-in ncclAllReduce 4' "$T/$1" &&
		grep -q '^stand-in ncclGroupEnd' "$T/$1" && grep -q '^rc 0' "$T/$1" &&
		[ "$(grep -c '^isle: NCCL' "$T/$1")" = 1 ] && grep -Eq "^isle: NCCL: $2" "$T/$1"; then
		ok "NCCL $3: the program's own NCCL ran; $(grep '^isle: NCCL' "$T/$1")"
	else
		bad "NCCL $3:"
		sed 's/^/     /' "$T/$1" | head -10
	fi
}
if gcc -shared -fPIC -Wl,-soname,libnccl.so.2 -o "$T/nccl/libnccl.so.2" "$T/nccl.c" &&
	gcc -shared -fPIC -Wl,-soname,libcudart.so.12 -o "$T/nccl/libcudart.so.12" "$T/cudart12.c"; then
	nccl_run none && nccl_want none "no CUDA runtime in the process" "without a CUDA runtime"
	nccl_run cuda12 -l:libcudart.so.12 &&
		nccl_want cuda12 "CUDA runtime 12\.8, isle's NCCL backend needs [0-9]+\.x" "on a CUDA 12 runtime"
	cuda=${CUDA_HOME:-/usr/local/cuda}
	if [ -f $B/lib/libisle_nccl.so ] && [ -e "$cuda/lib64/libcudart.so" ]; then
		nccl_run cudart -L"$cuda/lib64" -lcudart -Wl,-rpath,"$cuda/lib64" &&
			nccl_want cudart "libisle_nccl.so: backend init failed" \
				"with the real CUDA runtime and an incomplete NCCL"
	fi
else
	bad "cannot build the stand-in NCCL"
fi

# --- an MPI isle has no backend for: a stand-in library, neither family ----
cat >"$T/othermpi.c" <<'EOF'
#include <stdio.h>
int MPI_Init(int *argc, char ***argv) { printf("other MPI_Init\n"); return 0; }
int MPI_Allreduce(const void *s, void *r, int n, int dt, int op, int comm)
{ printf("other MPI_Allreduce %d\n", n); return 0; }
int MPI_Finalize(void) { printf("other MPI_Finalize\n"); return 0; }
EOF
cat >"$T/mpiprog.c" <<'EOF'
int MPI_Init(int *, char ***);
int MPI_Allreduce(const void *, void *, int, int, int, int);
int MPI_Finalize(void);
int main(int argc, char **argv)
{
	float b[8] = {0};

	return MPI_Init(&argc, &argv) | MPI_Allreduce(b, b, 8, 1, 2, 3) | MPI_Finalize();
}
EOF
mkdir -p "$T/other"
if gcc -shared -fPIC -Wl,-soname,libmpi.so.99 -o "$T/other/libmpi.so.99" "$T/othermpi.c" &&
	gcc -o "$T/other/prog" "$T/mpiprog.c" -Wl,--no-as-needed -Wl,-rpath,"$T/other" \
		-L"$T/other" -l:libmpi.so.99; then
	ISLE_COMM_VERBOSE=1 LD_PRELOAD=$PRE "$T/other/prog" >"$T/other.out" 2>&1
	rc=$?
	if [ $rc = 0 ] && grep -q '^other MPI_Init' "$T/other.out" &&
		grep -q '^other MPI_Allreduce 8' "$T/other.out" && grep -q '^other MPI_Finalize' "$T/other.out" &&
		[ "$(grep -c '^isle: ' "$T/other.out")" = 1 ] &&
		grep -q '^isle: MPI library not supported by isle .*pass through unchanged' "$T/other.out"; then
		ok "an unknown MPI: its own calls ran; $(grep '^isle: ' "$T/other.out")"
	else
		bad "an unknown MPI (rc $rc)"
		sed 's/^/     /' "$T/other.out" | head -8
	fi
else
	bad "cannot build the stand-in MPI"
fi

# --- 4..7: MPI ----------------------------------------------------------------
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_mpi_yield_when_idle=1
unset ISLE_PLAN ISLE_COMM_CODEC ISLE_COMM_ALGO ISLE_COMM_DISABLE ISLE_COMM_VERBOSE

# mpi KIND NP PRELOAD [VAR=VALUE...] -- ARGS: output in $T/out, rc returned.
# The timeout only guards against a hang; ISLE_COMM_TIMEOUT_S is far above it
# so that a stall shows as one.
mpi() {
	local kind=$1 np=$2 pre=$3 env=() e
	shift 3
	while [ "$1" != -- ]; do env+=("$1"); shift; done
	shift
	if [ "$kind" = ompi ]; then
		local args=(-x LD_PRELOAD="$pre" -x ISLE_COMM_TIMEOUT_S=600)
		for e in "${env[@]}"; do args+=(-x "$e"); done
		timeout 240 mpirun -np "$np" "${args[@]}" "$CHECK" "$@" >"$T/out" 2>&1
	else
		local args=(-env LD_PRELOAD "$pre" -env ISLE_COMM_TIMEOUT_S 600)
		for e in "${env[@]}"; do args+=(-env "${e%%=*}" "${e#*=}"); done
		timeout 240 mpiexec.mpich -np "$np" "${args[@]}" "$CHECK_MPICH" "$@" >"$T/out" 2>&1
	fi
}
show() { grep -E 'FAIL|rror|isle|Abort' "$T/out" | head -8 | sed 's/^/     /'; }

kinds=()
[ -x "$CHECK" ] && command -v mpirun >/dev/null && kinds+=(ompi)
[ -x "$CHECK_MPICH" ] && command -v mpiexec.mpich >/dev/null && kinds+=(mpich)
command -v mpirun >/dev/null || command -v mpiexec.mpich >/dev/null ||
	{ echo "SKIP: no MPI here (mpirun, mpiexec.mpich)"; exit 77; }
[ ${#kinds[@]} -gt 0 ] || { echo "FAIL: no MPI test program built ($CHECK, $CHECK_MPICH: make)"; exit 1; }
declare -A backend=([ompi]="Open MPI" [mpich]="MPICH")
for k in "${kinds[@]}"; do
	# 4. engaged on its backend, exact.
	if mpi $k 4 "$PRE" ISLE_COMM_VERBOSE=1 ISLE_COMM_CODEC=none -- \
		exact --sizes 1,1000,100000 --dtype both &&
		grep -q '^exact: PASS' "$T/out" &&
		grep -q "^isle_comm: 4 ranks, plan .*, ${backend[$k]} backend" "$T/out"; then
		ok "$k: exact against PMPI_Allreduce, engaged: $(grep -m1 '^isle_comm: 4 ranks' "$T/out")"
	else
		bad "$k: exact / engaged"
		show
	fi
	# 6. counts that differ across ranks (the shim's own ring: auto hands
	# a one-level job to MPI, which has no such check).
	for d in 1 -1; do
		mpi $k 3 "$PRE" ISLE_COMM_ALGO=ring -- mismatch --n 100000 --delta $d
		rc=$?
		if [ $rc -ne 0 ] && [ $rc -ne 124 ] &&
			grep -q 'count or datatype differs across ranks (MPI_ERR_TRUNCATE)' "$T/out" &&
			! grep -Eq 'timed out|^mismatch: rank' "$T/out"; then
			ok "$k: counts N and N$( [ $d = 1 ] && echo +1 || echo -1): rc $rc, $(grep -m1 'differs across ranks' "$T/out")"
		else
			bad "$k: counts N and N+($d): rc $rc"
			show
		fi
	done
done

# 5. the MPICH backend hidden: the preload library alone.
if [ -x "$CHECK_MPICH" ] && command -v mpiexec.mpich >/dev/null; then
	mkdir -p "$T/alone"
	cp "$PRE" "$T/alone/"
	if mpi mpich 4 "$T/alone/libisle_preload.so" ISLE_COMM_VERBOSE=1 ISLE_COMM_CODEC=none -- \
		exact --sizes 1,100000 && grep -q '^exact: PASS' "$T/out" &&
		grep -q '^isle: MPICH ABI: no backend .*libisle_mpi_mpich.so: MPI calls pass through unchanged' "$T/out" &&
		! grep -q '^isle_comm: ' "$T/out"; then
		ok "mpich, backend hidden: exact, passed through: $(grep -m1 '^isle: ' "$T/out")"
	else
		bad "mpich, backend hidden"
		show
	fi
	# A link to the library elsewhere: the backends are found beside the file.
	mkdir -p "$T/link"
	ln -s "$PRE" "$T/link/libisle_preload.so"
	if mpi mpich 2 "$T/link/libisle_preload.so" ISLE_COMM_VERBOSE=1 ISLE_COMM_CODEC=none -- \
		exact --sizes 100000 && grep -q '^exact: PASS' "$T/out" &&
		grep -q '^isle_comm: 2 ranks, plan .*, MPICH backend' "$T/out"; then
		ok "mpich, LD_PRELOAD through a symbolic link: engaged"
	else
		bad "mpich, LD_PRELOAD through a symbolic link"
		show
	fi
	if mpi mpich 2 "$T/alone/libisle_preload.so" ISLE_COMM_CODEC=int8 -- \
		exact --sizes 100000 --values real && grep -q '^exact: PASS' "$T/out" &&
		grep -q '^isle: MPICH ABI: no backend' "$T/out"; then
		ok "mpich, backend hidden, compression asked: the notice without ISLE_COMM_VERBOSE"
	else
		bad "mpich, backend hidden, compression asked"
		show
	fi
fi

# 7. processes outside MPI_COMM_WORLD.
if [[ " ${kinds[*]} " == *" ompi "* ]]; then
	cat >"$T/plan2.json" <<'EOF'
{"isle_plan": 1, "job_id": "t43", "ranks": [
 {"rank": 0, "node": "n00", "gpu": 0, "island": "nvl0", "leaf": "l0"},
 {"rank": 1, "node": "n01", "gpu": 0, "island": "nvl1", "leaf": "l0"}],
 "levels": [{"name": "nvlink", "bw_gbps": 100, "lat_us": 1, "codec": "none"},
            {"name": "net", "bw_gbps": 1, "lat_us": 20, "codec": "none"}]}
EOF
	if mpi ompi 2 "$PRE" ISLE_PLAN="$T/plan2.json" ISLE_COMM_VERBOSE=1 -- spawn --n 100000 &&
		[ "$(grep -c '^spawn: .* (merged): ok' "$T/out")" = 4 ] &&
		grep -q '^isle_comm: 2 ranks, plan ' "$T/out"; then
		ok "ompi: spawn + merge, 2 parents (plan) + 2 children: allreduce exact on all 4"
	else
		bad "ompi: spawn + merge"
		show
	fi
fi

[ $fails = 0 ] && echo "43-comm-preload-local: PASS" || echo "43-comm-preload-local: $fails FAILED"
[ $fails = 0 ]
