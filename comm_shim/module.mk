# comm_shim module: appends to LIBS_A BINS SHLIBS PLUGINS UNIT_TESTS INTEG_TESTS BENCHES (see Makefile)
#
#   $(B)/libisle_comm.a        everything below, PIC, for tests and the NCCL side
#                              (plan.o codec*.o algo.o config.o need no MPI)
#   $(B)/lib/libislecomm.so    the isle_comm_* / isle_plan_* / isle_codec_* API
#   $(B)/lib/libisle_preload.so     what the SPANK plugin preloads: the
#                                   interposed MPI/NCCL entry points, libc
#                                   only; loads one backend beside it
#   $(B)/lib/libisle_mpi_ompi.so    MPI backend for Open MPI
#   $(B)/lib/libisle_mpi_mpich.so   the same sources for the MPICH ABI
#   $(B)/tests/comm_mpi_check       MPI test driver (exactness, convergence,
#   $(B)/tests/comm_mpi_check_mpich failure), Open MPI and MPICH builds

# MPI is optional: without mpicc only the plan/codec/model part is built.
# Open MPI is the stack of libisle_comm.a and libislecomm.so.
OMPI_CC      ?= $(if $(shell command -v mpicc.openmpi 2>/dev/null),mpicc.openmpi,mpicc)
HAVE_MPI     ?= $(if $(shell command -v $(OMPI_CC) 2>/dev/null),1)
ifeq ($(HAVE_MPI),1)
MPI_CPPFLAGS := -DHAVE_MPI $(shell $(OMPI_CC) -showme:compile 2>/dev/null)
MPI_LDLIBS   := $(shell $(OMPI_CC) -showme:link 2>/dev/null)
endif
# MPICH ABI (Debian's libmpich-dev): the same MPI sources compiled again.
MPICH_CC     ?= mpicc.mpich
HAVE_MPICH   ?= $(if $(shell command -v $(MPICH_CC) 2>/dev/null),1)
ifeq ($(HAVE_MPICH),1)
MPICH_SHOW   := $(shell $(MPICH_CC) -show 2>/dev/null)
# MPICH's MPI_STATUSES_IGNORE is (MPI_Status *)1, which gcc takes for an
# empty array passed to MPI_Waitall.
MPICH_CPPFLAGS := -DHAVE_MPI $(filter -I% -D%,$(MPICH_SHOW)) -Wno-stringop-overflow
MPICH_LDLIBS := $(filter -L% -l%,$(MPICH_SHOW))
endif
CUDA_MAJOR   := $(shell sed -n 's/^\#define CUDART_VERSION  *\([0-9]*\).*/\1/p' \
		  $(CUDA_HOME)/include/cuda_runtime_api.h 2>/dev/null | head -1)
COMM_LDLIBS  := $(MPI_LDLIBS) -ljson-c -lm
# libisle_comm.a users link $(B)/libisle_proto.a after it (plans, codec
# specs).

# plan, codecs, cost model, config: no MPI. The rest is the MPI transport.
COMM_SRCS := comm_shim/plan.c comm_shim/codec.c comm_shim/codec_cpu.c \
	     comm_shim/algo.c comm_shim/config.c
ifeq ($(HAVE_MPI),1)
COMM_SRCS += comm_shim/comm.c comm_shim/coll.c comm_shim/xport.c \
	     comm_shim/async.c comm_shim/stats.c comm_shim/mpi_algo.c
endif
COMM_OBJS := $(COMM_SRCS:%.c=$(B)/%.o)
COMM_MPI_OBJS := $(B)/comm_shim/mpi_interpose.o

$(COMM_OBJS) $(COMM_MPI_OBJS) $(B)/comm_shim/comm_mpi_check.o: CPPFLAGS += $(MPI_CPPFLAGS)
$(B)/tests/unit/test_comm_%.o: CPPFLAGS += $(MPI_CPPFLAGS) -DISLE_SRCDIR='"$(CURDIR)"'

LIBS_A += $(B)/libisle_comm.a
$(B)/libisle_comm.a: $(COMM_OBJS)

SHLIBS += $(B)/lib/libislecomm.so
# Every proto object: isle_plan_* and isle_codec_parse/format are part of
# this library's API (libislecomm.map).
$(B)/lib/libislecomm.so: $(COMM_OBJS) $(PROTO_OBJS) comm_shim/libislecomm.map
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libislecomm.so \
		-Wl,--version-script=comm_shim/libislecomm.map -Wl,--no-undefined \
		-o $@ $(COMM_OBJS) $(PROTO_OBJS) $(COMM_LDLIBS)

# Unit tests (cmocka).
COMM_UNIT := test_comm_codec test_comm_plan test_comm_algo
UNIT_TESTS += $(COMM_UNIT:%=$(B)/tests/%)
$(COMM_UNIT:%=$(B)/tests/%): $(B)/tests/%: $(B)/tests/unit/%.o $(B)/libisle_comm.a \
		$(B)/libisle_proto.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(COMM_LDLIBS)

# The preload library: libc only (glibc 2.34+ keeps libdl and libpthread
# as empty compatibility libraries), checked.
SHLIBS += $(B)/lib/libisle_preload.so
$(B)/comm_shim/preload.o: CPPFLAGS += -DISLE_CUDA_MAJOR=$(if $(CUDA_MAJOR),$(shell echo $$(($(CUDA_MAJOR) / 1000))),0)
# proto's libc-only plan scan comes in as an object (plan_scan.o).
$(B)/lib/libisle_preload.so: $(B)/comm_shim/preload.o $(B)/proto/plan_scan.o \
		comm_shim/libisle_preload.map
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,--as-needed -Wl,-soname,libisle_preload.so \
		-Wl,--version-script=comm_shim/libisle_preload.map -Wl,--no-undefined \
		-o $@.tmp $(B)/comm_shim/preload.o $(B)/proto/plan_scan.o -ldl
	@bad=$$(readelf -d $@.tmp | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | \
		grep -Ev '^lib(c|m|dl|pthread)\.so\.[0-9]+$$'); \
		if [ -n "$$bad" ]; then echo "$@: must need libc only, not: $$bad" >&2; \
		rm -f $@.tmp; exit 1; fi
	@mv -f $@.tmp $@

ifeq ($(HAVE_MPI),1)
SHLIBS += $(B)/lib/libisle_mpi_ompi.so
$(B)/lib/libisle_mpi_ompi.so: $(COMM_MPI_OBJS) $(COMM_OBJS) $(B)/libisle_proto.a \
		comm_shim/libisle_mpi.map
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libisle_mpi_ompi.so \
		-Wl,--version-script=comm_shim/libisle_mpi.map -Wl,--no-undefined \
		-o $@ $(COMM_MPI_OBJS) $(COMM_OBJS) $(B)/libisle_proto.a \
		$(COMM_LDLIBS)

# MPI test driver, used by tests/integration/40-comm-mpi-local.sh and the
# srun test; it calls plain MPI_Allreduce, so the shim is LD_PRELOADed.
BINS_TESTS_COMM := $(B)/tests/comm_mpi_check
$(B)/tests/comm_mpi_check: $(B)/comm_shim/comm_mpi_check.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(MPI_LDLIBS) -lm
all: $(BINS_TESTS_COMM)

# The per-job report through proto's reader, for scripts (test 67).
$(B)/tests/report_dump: $(B)/comm_shim/report_dump.o $(B)/libisle_proto.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ljson-c
all: $(B)/tests/report_dump

# Fashion-MNIST MLP, data parallel over plain MPI_Allreduce (convergence
# under the shim: tests/integration/46-comm-mnist-spank.sh, make bench-converge).
$(B)/comm_shim/train_mnist.o: CPPFLAGS += $(MPI_CPPFLAGS)
$(B)/tests/train_mnist: $(B)/comm_shim/train_mnist.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(MPI_LDLIBS) -lz -lm
all: $(B)/tests/train_mnist
BENCHES += bench-converge
.PHONY: bench-converge
bench-converge: $(B)/tests/train_mnist $(B)/lib/libisle_preload.so $(B)/lib/libisle_mpi_ompi.so
	@B=$(CURDIR)/$(B) scripts/bench-converge.sh; rc=$$?; \
		if [ $$rc = 77 ]; then echo "bench-converge: skipped"; else exit $$rc; fi

# Paired benchmark: every variant interleaved in one job (make bench-comm).
$(B)/comm_shim/bench_paired.o: CPPFLAGS += $(MPI_CPPFLAGS)
$(B)/bench/bench_paired: $(B)/comm_shim/bench_paired.o $(B)/comm_shim/bench_util.o \
		$(B)/comm_shim/mpi_algo.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(MPI_LDLIBS) -lm
all: $(B)/bench/bench_paired

# Plan load time for a large job (prints, asserts nothing):
#   build/tests/bench_plan 65536
$(B)/comm_shim/bench_plan.o: CPPFLAGS += $(MPI_CPPFLAGS)
$(B)/tests/bench_plan: $(B)/comm_shim/bench_plan.o $(B)/libisle_comm.a \
		$(B)/libisle_proto.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(COMM_LDLIBS)
all: $(B)/tests/bench_plan
endif

ifeq ($(HAVE_MPICH),1)
# The MPI sources under MPICH's mpi.h; plan/codec/model objects are shared.
COMM_MPICH_SRCS := comm_shim/comm.c comm_shim/coll.c comm_shim/xport.c \
		   comm_shim/async.c comm_shim/stats.c comm_shim/mpi_interpose.c \
		   comm_shim/mpi_algo.c
COMM_MPICH_OBJS := $(COMM_MPICH_SRCS:%.c=$(B)/mpich/%.o)
COMM_CORE_MPICH := $(patsubst %,$(B)/comm_shim/%.o,plan codec codec_cpu algo config)
$(B)/mpich/comm_shim/%.o: comm_shim/%.c | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(MPICH_CPPFLAGS) $(CFLAGS) -c -o $@ $<
SHLIBS += $(B)/lib/libisle_mpi_mpich.so
$(B)/lib/libisle_mpi_mpich.so: $(COMM_MPICH_OBJS) $(COMM_CORE_MPICH) \
		$(B)/libisle_proto.a comm_shim/libisle_mpi.map
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libisle_mpi_mpich.so \
		-Wl,--version-script=comm_shim/libisle_mpi.map -Wl,--no-undefined \
		-o $@ $(COMM_MPICH_OBJS) $(COMM_CORE_MPICH) $(B)/libisle_proto.a \
		$(MPICH_LDLIBS) -ljson-c -lm
BINS_TESTS_COMM += $(B)/tests/comm_mpi_check_mpich
$(B)/tests/comm_mpi_check_mpich: $(B)/mpich/comm_shim/comm_mpi_check.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(MPICH_LDLIBS) -lm
all: $(B)/tests/comm_mpi_check_mpich
$(B)/bench/bench_paired_mpich: $(B)/mpich/comm_shim/bench_paired.o \
		$(B)/comm_shim/bench_util.o $(B)/mpich/comm_shim/mpi_algo.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(MPICH_LDLIBS) -lm
all: $(B)/bench/bench_paired_mpich
endif

# GPU side: the CUDA codec backend, the NCCL backend, their GPU checks and
# the comm benchmark (comm_shim/gpu.mk).
include comm_shim/gpu.mk

# Start-up cost of the preload library (not a test): make bench-preload.
all: $(B)/bench/bench_preload
$(B)/bench/bench_preload: $(B)/comm_shim/bench_preload.o $(B)/comm_shim/bench_util.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^
BENCHES += bench-preload
.PHONY: bench-preload
bench-preload: $(B)/bench/bench_preload $(B)/lib/libisle_preload.so
	@mkdir -p $(B)/bench
	bench/stamp.sh $(B)/bench/preload.json -- \
		$(B)/bench/bench_preload --preload $(CURDIR)/$(B)/lib/libisle_preload.so \
		--runs $(or $(RUNS),50) --warmup 5 -o $(B)/bench/preload.json \
		-- python3 -c pass -- /bin/true
	@echo "bench-preload: $(B)/bench/preload.json"
