#!/bin/bash
# run-gpu-check.sh - the comm_shim GPU check, in one short run on a machine
# with an NVIDIA GPU (e.g. through the device `run` tool):
#   1. build the CUDA codecs, libisle_nccl.so and the two check programs;
#   2. codec_cuda_check: GPU codecs bit-identical to the CPU reference (NaN/inf
#      and int8's tiny-block rule included);
#   3. nccl_smoke under LD_PRELOAD=libisle_preload.so (-> libisle_nccl.so) with the hierarchical
#      path forced, once per codec.
# Writes its log to ${OUT:-build/gpu-check}/gpu-check.log.
# Exit 0 pass, 1 fail, 77 no GPU.
#
# --prebuilt: skip step 1 and run what a machine with the build
# dependencies made (build/lib, build/tests/gpu), for a GPU machine that has
# CUDA and NCCL but not isle's build dependencies (json-c headers, nccl.h
# under CUDA_HOME): json-c's runtime library is looked up in
# build/gpu-libs (copy it there) and NCCL in CUDA_HOME, else in Python's
# nvidia-nccl package.
set -uo pipefail
cd "$(dirname "$0")/../.."

out=${OUT:-build/gpu-check}
mkdir -p "$out"
log=$out/gpu-check.log
exec > >(tee "$log") 2>&1

if ! nvidia-smi -L; then
	echo "run-gpu-check: SKIP: no GPU"
	exit 77
fi

targets="build/lib/libisle_preload.so build/lib/libisle_nccl.so build/tests/gpu/codec_cuda_check build/tests/gpu/nccl_smoke"
if [ "${1:-}" = --prebuilt ]; then
	for t in $targets; do
		[ -f "$t" ] || { echo "run-gpu-check: FAIL: --prebuilt: $t missing"; exit 1; }
	done
	libs=$PWD/build/gpu-libs
	cuda=${CUDA_HOME:-/usr/local/cuda}
	if [ ! -e "$cuda/lib64/libnccl.so.2" ]; then
		nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || true)
		[ -n "$nccl" ] && libs=$libs:$nccl
	fi
	export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	echo "run-gpu-check: prebuilt binaries, LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
else
	# Only the GPU pieces: the Slurm part of the top-level deps check is
	# not needed here, so point make's deps stamp at a file that exists.
	stamp=$out/.deps-ok
	touch "$stamp"
	# sm_90 (H100/H200) only keeps the build short; override CUDA_ARCHS.
	if ! make -j"$(nproc)" DEPS_OK="$stamp" CUDA_ARCHS="${CUDA_ARCHS:-90}" $targets; then
		echo "run-gpu-check: FAIL: build"
		exit 1
	fi
fi

fail=0
echo "== codec_cuda_check"
timeout 300 build/tests/gpu/codec_cuda_check || fail=1

shim=$PWD/build/lib/libisle_preload.so
for codec in none fp16 bf16 int8 topk:0.01 topk:0.25; do
	echo "== nccl_smoke $codec"
	err=$out/smoke-${codec//:/_}.err
	ISLE_COMM_ALGO=hier ISLE_COMM_CODEC=$codec ISLE_COMM_VERBOSE=1 \
		LD_PRELOAD=$shim timeout 120 build/tests/gpu/nccl_smoke "$codec" 2>"$err"
	rc=$?
	cat "$err"
	# The shim must have taken the call, not only NCCL.
	if [ $rc -ne 0 ] || ! grep -q "isle_nccl: rank 0: 1 groups of 1 ranks, codec" "$err"; then
		echo "run-gpu-check: FAIL: nccl_smoke $codec (rc $rc)"
		fail=1
	fi
done

[ $fail = 0 ] && echo "run-gpu-check: PASS" || echo "run-gpu-check: FAIL"
exit $fail
