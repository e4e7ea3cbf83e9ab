# comm_shim GPU side (included at the end of comm_shim/module.mk):
#
#   $(B)/comm_shim/codec_cuda.o       CUDA codec backend (nvcc)
#   $(B)/lib/libisle_nccl.so          ncclAllReduce backend of libisle_preload.so
#   $(B)/tests/gpu/codec_cuda_check   GPU codecs against the CPU reference
#   $(B)/tests/gpu/nccl_smoke         1-GPU NCCL allreduce through the shim
#   $(B)/tests/test_comm_cuda_build   unit test: the .so loads, exports, fails
#                                     cleanly without a GPU
#   $(B)/bench/bench_comm, bench-comm  the emulated two-tier network benchmark
#
# Everything CUDA is built when $(CUDA_HOME) has nvcc and nccl.h (HAVE_CUDA=1)
# and only run where a GPU exists (tests/gpu/run-gpu-check.sh, docs/gpu.md).

NVCC       ?= $(CUDA_HOME)/bin/nvcc
HAVE_CUDA  ?= $(shell test -x $(NVCC) -a -f $(CUDA_HOME)/include/nccl.h && echo 1)
# SASS for A100 and H100/H200, PTX of the newest for later GPUs.
CUDA_ARCHS ?= 80 90
NVCCFLAGS  ?= -O2 -g
NVCCFLAGS  += -std=c++17 -Werror all-warnings \
	      -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra \
	      $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
	      -gencode arch=compute_$(lastword $(CUDA_ARCHS)),code=compute_$(lastword $(CUDA_ARCHS))
CUDA_CPPFLAGS := -DHAVE_CUDA -I$(CUDA_HOME)/include
CUDA_LDLIBS   := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart

ifeq ($(HAVE_CUDA),1)

$(B)/comm_shim/%.o: comm_shim/%.cu | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -D_GNU_SOURCE -Iproto -Icomm_shim -MMD -MP -c -o $@ $<

$(B)/comm_shim/nccl_shim.o $(B)/tests/gpu/%.o \
$(B)/tests/unit/test_comm_cuda_build.o: CPPFLAGS += $(CUDA_CPPFLAGS)

# Neither NCCL nor the CUDA runtime is linked: the backend uses the ones
# the program loaded (libisle_preload.so checks their versions, makes the
# runtime global and hands over a resolver for NCCL), so a program with its
# own CUDA runtime (PyTorch wheels) never gets a second one. The CUDA calls
# (and nvcc's kernel registration) stay undefined here, hence no
# --no-undefined; the readelf lines keep NEEDED free of both.
# Only the MPI-free objects of libisle_comm.a (plan, codecs, cost model,
# config) go in, named one by one and linked without $(MPI_LDLIBS): an MPI
# symbol creeping into them or into nccl_shim.c fails the link
# (--no-undefined) instead of silently making every NCCL program load
# libmpi. The readelf line keeps that true where --as-needed is off
# (SANITIZE=1 builds, other toolchains).
COMM_CORE_OBJS := $(patsubst %,$(B)/comm_shim/%.o,plan codec codec_cpu algo config) \
		  $(PROTO_OBJS)
COMM_CORE_LDLIBS := -ljson-c -lm
SHLIBS += $(B)/lib/libisle_nccl.so
$(B)/lib/libisle_nccl.so: $(B)/comm_shim/nccl_shim.o $(B)/comm_shim/codec_cuda.o \
			  $(COMM_CORE_OBJS) comm_shim/libisle_nccl.map
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libisle_nccl.so \
		-Wl,--version-script=comm_shim/libisle_nccl.map \
		-o $@.tmp $(B)/comm_shim/nccl_shim.o $(B)/comm_shim/codec_cuda.o \
		$(COMM_CORE_OBJS) -lstdc++ $(COMM_CORE_LDLIBS) -ldl
	@if readelf -d $@.tmp | grep -Eq 'NEEDED.*lib(mpi|cudart|nccl)'; then \
		echo "$@: must not depend on libmpi, libcudart or libnccl" >&2; \
		rm -f $@.tmp; exit 1; fi
	@mv -f $@.tmp $@

# GPU checks: built everywhere CUDA is, run by tests/gpu/run-gpu-check.sh.
GPU_CHECKS := $(B)/tests/gpu/codec_cuda_check $(B)/tests/gpu/nccl_smoke
all: $(GPU_CHECKS)
$(B)/tests/gpu/codec_cuda_check: $(B)/tests/gpu/codec_cuda_check.o \
				 $(B)/comm_shim/codec_cuda.o $(COMM_CORE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(CUDA_LDLIBS) -lstdc++ $(COMM_CORE_LDLIBS)
# Linked against the real NCCL only: the shim comes in by LD_PRELOAD.
$(B)/tests/gpu/nccl_smoke: $(B)/tests/gpu/nccl_smoke.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -L$(CUDA_HOME)/lib64 -lnccl $(CUDA_LDLIBS) -lm

UNIT_TESTS += $(B)/tests/test_comm_cuda_build
$(B)/tests/unit/test_comm_cuda_build.o: CPPFLAGS += \
	-DISLE_NCCL_SO='"$(CURDIR)/$(B)/lib/libisle_nccl.so"' \
	-DISLE_NCCL_REAL='"$(CUDA_HOME)/lib64/libnccl.so.2"'
# Linked with the CUDA runtime, as any CUDA program the backend goes into.
$(B)/tests/test_comm_cuda_build: $(B)/tests/unit/test_comm_cuda_build.o | $(B)/lib/libisle_nccl.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -Wl,--no-as-needed -o $@ $^ $(CMOCKA_LIBS) $(CUDA_LDLIBS) -ldl

endif # HAVE_CUDA

# Benchmark: emulated two-tier network (scripts/bench-comm.sh). Needs root
# for the namespaces; skips (exit 77) where it cannot run.
# The driver lives with the other benchmark tools in $(B)/bench/ (not
# installed).
all: $(B)/bench/bench_comm
$(B)/comm_shim/bench_comm.o: CPPFLAGS += $(MPI_CPPFLAGS)
$(B)/bench/bench_comm: $(B)/comm_shim/bench_comm.o $(B)/comm_shim/bench_comm_report.o \
		$(B)/comm_shim/bench_util.o $(B)/libisle_comm.a \
		$(B)/libisle_proto.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(COMM_LDLIBS)

BENCHES += bench-comm
.PHONY: bench-comm bench-comm-paired
# First the paired measurement (bench/comm/paired.sh: every variant
# interleaved in one job per MPI, Open MPI and MPICH, on this host), then the
# emulated two-tier network.
bench-comm: bench-comm-paired $(B)/bench/bench_comm
	@B=$(CURDIR)/$(B) scripts/bench-comm.sh; rc=$$?; \
		if [ $$rc = 77 ]; then echo "bench-comm: skipped"; else exit $$rc; fi
bench-comm-paired: $(B)/bench/bench_paired $(B)/lib/libisle_preload.so \
		$(if $(filter 1,$(HAVE_MPICH)),$(B)/bench/bench_paired_mpich)
	@B=$(CURDIR)/$(B) bench/comm/paired.sh; rc=$$?; \
		if [ $$rc = 77 ]; then echo "bench-comm-paired: skipped"; else exit $$rc; fi
