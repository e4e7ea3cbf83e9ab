# topology module: the cluster model library, its loaders and emitters, and
# islectl. Appends to LIBS_A BINS UNIT_TESTS BENCHES (see Makefile).

# Libraries a user of libisle_topo.a links after it: proto's name check
# (isle_name_check) and json-c.
TOPO_LDLIBS := $(B)/libisle_proto.a -ljson-c

TOPO_SRCS := topology/model.c topology/index.c topology/hostlist.c \
	     topology/json_load.c topology/json_save.c topology/lint.c \
	     topology/emit_slurm.c topology/emit_gres.c topology/emit_nccl.c \
	     topology/emit_dot.c topology/emit_fabric.c topology/fileio.c \
	     topology/finalize.c topology/json_fast.c \
	     topology/json_walk.c
TOPO_OBJS := $(TOPO_SRCS:%.c=$(B)/%.o)
ALL_OBJS += $(TOPO_OBJS)

LIBS_A += $(B)/libisle_topo.a
$(B)/libisle_topo.a: $(TOPO_OBJS) $(B)/libisle_proto.a

# islectl: one file per subcommand beside islectl.c (see topology/islectl.h);
# formats of other modules come through libisle_proto.a.
ISLECTL_OBJS := $(B)/topology/islectl.o $(B)/topology/islectl_dot.o \
		$(B)/topology/islectl_explain.o
ALL_OBJS += $(ISLECTL_OBJS)
BINS += $(B)/bin/islectl
$(B)/bin/islectl: $(ISLECTL_OBJS) $(B)/libisle_topo.a $(B)/libisle_proto.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(filter %.a,$^) \
		$(TOPO_LDLIBS) $(LDLIBS)

UNIT_TESTS += $(B)/tests/test_topo_explain
$(B)/tests/test_topo_explain: $(B)/tests/unit/test_topo_explain.o \
		$(B)/topology/islectl_explain.o $(B)/libisle_proto.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ljson-c $(CMOCKA_LIBS) $(LDLIBS)

# Unit tests.
TOPO_TESTS := $(B)/tests/test_topo_model $(B)/tests/test_topo_hostlist \
	      $(B)/tests/test_topo_json $(B)/tests/test_topo_emit
UNIT_TESTS += $(TOPO_TESTS)

$(B)/tests/unit/test_topo_json.o $(B)/tests/unit/test_topo_emit.o: CPPFLAGS += \
	-DTOPO_GOLDEN_DIR='"$(CURDIR)/tests/golden/topology"'

$(TOPO_TESTS): $(B)/tests/%: $(B)/tests/unit/%.o $(B)/libisle_topo.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(TOPO_LDLIBS) $(CMOCKA_LIBS) $(LDLIBS)

# The fast JSON parser against json-c on the golden files and mutations.
UNIT_TESTS += $(B)/tests/test_topo_json_fast
$(B)/tests/unit/test_topo_json_fast.o: CPPFLAGS += \
	-DGOLDEN_ROOT='"$(CURDIR)/tests/golden"'
$(B)/tests/test_topo_json_fast: $(B)/tests/unit/test_topo_json_fast.o \
		$(B)/libisle_topo.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(TOPO_LDLIBS) $(CMOCKA_LIBS) $(LDLIBS)

# isle's host lists against libslurm's on a generated corpus: linked with
# the libslurm.so of SLURM= (rebuilt when the release changes); without one
# the test skips and says so.
HOSTLIST_SLURM_TEST := $(B)/tests/test_topo_hostlist_slurm
HOSTLIST_SLURM_LIB  := $(wildcard $(SLURM_PREFIX)/lib/libslurm.so)
UNIT_TESTS += $(HOSTLIST_SLURM_TEST)
$(B)/tests/unit/test_topo_hostlist_slurm.o: $(SLURM_TREE_STAMP)
ifneq ($(HOSTLIST_SLURM_LIB),)
$(B)/tests/unit/test_topo_hostlist_slurm.o: CPPFLAGS += -DHAVE_LIBSLURM \
	-isystem $(SLURM_PREFIX)/include
$(HOSTLIST_SLURM_TEST): LDLIBS += -L$(SLURM_PREFIX)/lib \
	-Wl,-rpath,$(SLURM_PREFIX)/lib -lslurm
endif
$(HOSTLIST_SLURM_TEST): $(B)/tests/unit/test_topo_hostlist_slurm.o \
		$(B)/libisle_topo.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(TOPO_LDLIBS) $(CMOCKA_LIBS) $(LDLIBS)

# --- ibnetdiscover dumps and node JSON files (topology/ibnd_*.c,
# topology/node_json.c) ---
IBND_OBJS := $(addprefix $(B)/topology/,ibnd_parse.o ibnd_fabric.o ibnd_topo.o \
	       node_json.o)
ALL_OBJS += $(IBND_OBJS)
$(B)/libisle_topo.a: $(IBND_OBJS)

IBND_TESTS := $(B)/tests/test_topo_ibnd
UNIT_TESTS += $(IBND_TESTS)
$(IBND_TESTS): $(B)/tests/%: $(B)/tests/unit/%.o $(B)/libisle_topo.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(TOPO_LDLIBS) $(CMOCKA_LIBS) $(LDLIBS)

# Benchmark: a 10,000-node, 80,000-GPU rail-optimized fabric.
BENCHES += bench-topo
.PHONY: bench-topo
ALL_OBJS += $(B)/topology/bench_topo.o
$(B)/bench/bench_topo: $(B)/topology/bench_topo.o $(B)/libisle_topo.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(TOPO_LDLIBS) $(LDLIBS)
bench-topo: $(B)/bench/bench_topo
	@mkdir -p $(B)/bench
	@$(B)/bench/bench_topo -o $(B)/bench/topo.json | tee $(B)/bench/topo.txt
