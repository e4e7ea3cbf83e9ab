# agent module: libisle_agent.a (node discovery: hwloc, NVML via dlopen,
# ibverbs; node JSON writer), the isle-agent binary and its unit tests.
# Appends to LIBS_A BINS UNIT_TESTS (see Makefile).

AGENT_SRCS := agent/discover.c agent/discover_hwloc.c agent/discover_nvml.c \
	      agent/discover_ibv.c agent/discover_json.c agent/fabric.c
AGENT_OBJS := $(AGENT_SRCS:%.c=$(B)/%.o)
ALL_OBJS   += $(AGENT_OBJS) $(B)/agent/isle-agent.o

LIBS_A += $(B)/libisle_agent.a
$(B)/libisle_agent.a: $(AGENT_OBJS)

# Libraries a user of libisle_agent.a links after it (NVML is dlopen'ed).
AGENT_LDLIBS := -lhwloc -libverbs -ldl

BINS += $(B)/bin/isle-agent
$(B)/bin/isle-agent: $(B)/agent/isle-agent.o $(B)/libisle_agent.a $(B)/libisle_topo.a \
		$(B)/libisle_proto.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(AGENT_LDLIBS) $(TOPO_LDLIBS) $(LDLIBS)

AGENT_TESTS := $(B)/tests/test_agent_discover
UNIT_TESTS += $(AGENT_TESTS)
$(AGENT_TESTS): $(B)/tests/%: $(B)/tests/unit/%.o $(B)/libisle_agent.a $(B)/libisle_topo.a \
		$(B)/libisle_proto.a \
		| $(B)/tests/libfake_nvml.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(AGENT_LDLIBS) $(TOPO_LDLIBS) $(CMOCKA_LIBS) $(LDLIBS)

# A stand-in libnvidia-ml.so.1 that test_agent_discover dlopens (through
# ISLE_NVML_LIBRARY) to run the NVML backend without a GPU.
$(B)/tests/libfake_nvml.so: $(B)/tests/unit/fake_nvml.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -shared -o $@ $^

# --- `isle-agent plan`: the per-job plan written by the SPANK job prolog
# (agent/plan*.c). Its unit test reads the plans back with proto's reader,
# the one the shim uses.
PLAN_SRCS := agent/plan_util.c agent/plan_build.c agent/plan_emit.c \
	     agent/plan_rundir.c agent/plan_cmd.c
PLAN_OBJS := $(PLAN_SRCS:%.c=$(B)/%.o)
ALL_OBJS  += $(PLAN_OBJS)
$(B)/libisle_agent.a: $(PLAN_OBJS)

UNIT_TESTS += $(B)/tests/test_agent_plan
$(B)/tests/test_agent_plan: $(B)/tests/unit/test_agent_plan.o \
		$(B)/libisle_agent.a $(B)/libisle_topo.a $(B)/libisle_proto.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(AGENT_LDLIBS) $(PROTO_LDLIBS) $(TOPO_LDLIBS) \
		$(CMOCKA_LIBS) $(LDLIBS)
