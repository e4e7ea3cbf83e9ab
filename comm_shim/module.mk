# comm_shim module: appends to LIBS_A BINS SHLIBS PLUGINS UNIT_TESTS INTEG_TESTS BENCHES (see Makefile)
#
#   $(B)/libisle_comm.a        everything below, PIC, for tests and the NCCL side
#                              (plan.o codec*.o algo.o config.o need no MPI)
#   $(B)/lib/libislecomm.so    the isle_comm_* / isle_plan_* / isle_codec_* API
#   $(B)/lib/libisle_mpi.so    PMPI interposer (LD_PRELOAD), self-contained
#   $(B)/tests/comm_mpi_check  MPI test driver (exactness, convergence, failure)

# MPI is optional: without mpicc only the plan/codec/model part is built.
HAVE_MPI     ?= $(if $(shell command -v mpicc 2>/dev/null),1)
ifeq ($(HAVE_MPI),1)
MPI_CPPFLAGS := -DHAVE_MPI $(shell mpicc -showme:compile 2>/dev/null)
MPI_LDLIBS   := $(shell mpicc -showme:link 2>/dev/null)
endif
COMM_LDLIBS  := $(MPI_LDLIBS) -ljson-c -lm

# plan, codecs, cost model, config: no MPI. The rest is the MPI transport.
COMM_SRCS := comm_shim/plan.c comm_shim/codec.c comm_shim/codec_cpu.c \
	     comm_shim/algo.c comm_shim/config.c
ifeq ($(HAVE_MPI),1)
COMM_SRCS += comm_shim/comm.c comm_shim/coll.c comm_shim/xport.c \
	     comm_shim/async.c
endif
COMM_OBJS := $(COMM_SRCS:%.c=$(B)/%.o)
COMM_MPI_OBJS := $(B)/comm_shim/mpi_interpose.o

$(COMM_OBJS) $(COMM_MPI_OBJS) $(B)/comm_shim/comm_mpi_check.o: CPPFLAGS += $(MPI_CPPFLAGS)
$(B)/tests/unit/test_comm_%.o: CPPFLAGS += $(MPI_CPPFLAGS) -DISLE_SRCDIR='"$(CURDIR)"'

LIBS_A += $(B)/libisle_comm.a
$(B)/libisle_comm.a: $(COMM_OBJS)

SHLIBS += $(B)/lib/libislecomm.so
$(B)/lib/libislecomm.so: $(COMM_OBJS) comm_shim/libislecomm.map
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libislecomm.so \
		-Wl,--version-script=comm_shim/libislecomm.map -Wl,--no-undefined \
		-o $@ $(COMM_OBJS) $(COMM_LDLIBS)

# Unit tests (cmocka).
COMM_UNIT := test_comm_codec test_comm_plan test_comm_algo
UNIT_TESTS += $(COMM_UNIT:%=$(B)/tests/%)
$(COMM_UNIT:%=$(B)/tests/%): $(B)/tests/%: $(B)/tests/unit/%.o $(B)/libisle_comm.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(COMM_LDLIBS)

ifeq ($(HAVE_MPI),1)
SHLIBS += $(B)/lib/libisle_mpi.so
$(B)/lib/libisle_mpi.so: $(COMM_MPI_OBJS) $(COMM_OBJS) comm_shim/libisle_mpi.map
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libisle_mpi.so \
		-Wl,--version-script=comm_shim/libisle_mpi.map -Wl,--no-undefined \
		-o $@ $(COMM_MPI_OBJS) $(COMM_OBJS) $(COMM_LDLIBS)

# MPI test driver, used by tests/integration/40-comm-mpi-local.sh and the
# srun test; it calls plain MPI_Allreduce, so the shim is LD_PRELOADed.
BINS_TESTS_COMM := $(B)/tests/comm_mpi_check
$(B)/tests/comm_mpi_check: $(B)/comm_shim/comm_mpi_check.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(MPI_LDLIBS) -lm
all: $(BINS_TESTS_COMM)

# Plan load time for a large job (prints, asserts nothing):
#   build/tests/bench_plan 65536
$(B)/comm_shim/bench_plan.o: CPPFLAGS += $(MPI_CPPFLAGS)
$(B)/tests/bench_plan: $(B)/comm_shim/bench_plan.o $(B)/libisle_comm.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(COMM_LDLIBS)
all: $(B)/tests/bench_plan
endif

# GPU side, benchmark (owned by the GPU/bench engineer).
include comm_shim/gpu.mk
