# slurm_plugin module: topology/isle (topology_isle.so), job_submit/isle
# (job_submit_isle.so) and the isle SPANK plugin (spank_isle.so) for Slurm
# 24.11, 25.11 and 26.05 (one source; the release differences live in
# isle_compat.c). The formats they share with other processes (job
# options, plan and run-dir names, cluster-file lookup, decision records)
# come from libisle_proto.a.
#
# Both plugins are built like Slurm's own (-module -avoid-version: a plain
# shared object, no libslurm on the link line): Slurm symbols resolve at load
# time from slurmctld / scontrol / slurmd (libslurmfull). The isle static
# libraries are linked in, so json-c is the only other runtime dependency.
# Exported ABI: only the symbols Slurm dlsyms (version scripts *.map).

SLURM_PLUGIN_CPPFLAGS := -DHAVE_CONFIG_H -isystem $(SLURM_SRC) \
			 -isystem $(SLURM_SRC)/slurm -Islurm_plugin
# Slurm's own sources are compiled as Slurm compiles them (no -Werror).
SLURM_SRC_CFLAGS := -DHAVE_CONFIG_H -DSLURM_PLUGIN_DEBUG -I$(SLURM_SRC) \
		    -I$(SLURM_SRC)/slurm -O2 -g -fPIC -fvisibility=hidden \
		    -pthread -w

# --- topology/isle -------------------------------------------------------
TOPO_ISLE_SRCS := topology_isle.c isle_compat.c isle_model.c isle_eval.c \
		  isle_decision.c isle_store.c isle_load.c isle_policy.c \
		  spank_opts.c \
		  isle_topoinfo.c isle_jobinfo.c isle_version.c
TOPO_ISLE_OBJS := $(TOPO_ISLE_SRCS:%.c=$(B)/slurm_plugin/%.o)
# topology/common from the configured Slurm tree, as topology/tree links it.
SLURM_TOPO_COMMON := common_topo eval_nodes gres_filter gres_sched
SLURM_TOPO_COMMON_OBJS := $(SLURM_TOPO_COMMON:%=$(B)/slurm_plugin/slurm_common/%.o)

# --- job_submit/isle ----------------------------------------------------
JOBSUB_ISLE_SRCS := job_submit_isle.c isle_policy.c spank_opts.c
JOBSUB_ISLE_OBJS := $(JOBSUB_ISLE_SRCS:%.c=$(B)/slurm_plugin/%.o)

# --- spank_isle ----------------------------------------------------------
SPANK_ISLE_SRCS := spank_isle.c spank_opts.c spank_local.c spank_remote.c \
		   spank_job.c spank_gres.c isle_version.c
SPANK_ISLE_OBJS := $(SPANK_ISLE_SRCS:%.c=$(B)/slurm_plugin/%.o)

ALL_OBJS += $(TOPO_ISLE_OBJS) $(JOBSUB_ISLE_OBJS) $(SPANK_ISLE_OBJS)

$(TOPO_ISLE_OBJS) $(JOBSUB_ISLE_OBJS) $(SPANK_ISLE_OBJS): \
	CPPFLAGS += $(SLURM_PLUGIN_CPPFLAGS)

$(B)/slurm_plugin/slurm_common/%.o: $(SLURM_SRC)/src/plugins/topology/common/%.c | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(SLURM_SRC_CFLAGS) -c -o $@ $<

PLUGINS += $(B)/slurm/topology_isle.so $(B)/slurm/job_submit_isle.so \
	   $(B)/slurm/spank_isle.so

$(B)/slurm/topology_isle.so: $(TOPO_ISLE_OBJS) $(SLURM_TOPO_COMMON_OBJS) \
			     $(B)/libisle_place.a $(B)/libisle_topo.a \
			     $(B)/libisle_proto.a slurm_plugin/topology_isle.map
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -o $@ $(TOPO_ISLE_OBJS) \
		$(SLURM_TOPO_COMMON_OBJS) $(B)/libisle_place.a \
		$(B)/libisle_topo.a $(B)/libisle_proto.a \
		-Wl,--version-script=slurm_plugin/topology_isle.map \
		-ljson-c -lm $(LDLIBS)

$(B)/slurm/job_submit_isle.so: $(JOBSUB_ISLE_OBJS) $(B)/libisle_topo.a \
				$(B)/libisle_proto.a slurm_plugin/job_submit_isle.map
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -o $@ $(JOBSUB_ISLE_OBJS) $(B)/libisle_topo.a \
		$(B)/libisle_proto.a \
		-Wl,--version-script=slurm_plugin/job_submit_isle.map \
		-ljson-c -lm $(LDLIBS)

$(B)/slurm/spank_isle.so: $(SPANK_ISLE_OBJS) $(B)/libisle_proto.a \
			  slurm_plugin/spank_isle.map
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -o $@ $(SPANK_ISLE_OBJS) $(B)/libisle_proto.a \
		-Wl,--version-script=slurm_plugin/spank_isle.map \
		$(PROTO_LDLIBS) $(LDLIBS)

# --- tests and bench -----------------------------------------------------
SLURM_PLUGIN_TESTS := $(B)/tests/test_slurm_plugin_spank_opts
UNIT_TESTS += $(SLURM_PLUGIN_TESTS)
$(B)/tests/test_slurm_plugin_spank_opts: \
		$(B)/tests/unit/test_slurm_plugin_spank_opts.o \
		$(B)/slurm_plugin/spank_opts.o $(B)/slurm_plugin/spank_gres.o \
		$(B)/libisle_proto.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(PROTO_LDLIBS) $(CMOCKA_LIBS) $(LDLIBS)
$(B)/tests/unit/test_slurm_plugin_spank_opts.o: CPPFLAGS += $(SLURM_PLUGIN_CPPFLAGS)

BENCHES += bench-slurm
.PHONY: bench-slurm
bench-slurm: $(PLUGINS) $(BINS)
	@mkdir -p $(B)/bench
	slurm_plugin/bench-slurm.sh $(B)/bench/slurm_side_by_side-$(SLURM_VER).json

UNIT_TESTS += $(B)/tests/test_slurm_plugin_store
$(B)/tests/test_slurm_plugin_store: $(B)/tests/unit/test_slurm_plugin_store.o \
		$(B)/slurm_plugin/isle_store.o $(B)/libisle_proto.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ljson-c $(CMOCKA_LIBS) $(LDLIBS)
$(B)/tests/unit/test_slurm_plugin_store.o: CPPFLAGS += -Islurm_plugin

UNIT_TESTS += $(B)/tests/test_slurm_plugin_load
$(B)/tests/test_slurm_plugin_load: $(B)/tests/unit/test_slurm_plugin_load.o \
		$(B)/slurm_plugin/isle_load.o $(B)/libisle_place.a \
		$(B)/libisle_topo.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(TOPO_LDLIBS) $(CMOCKA_LIBS) -lm $(LDLIBS)
$(B)/tests/unit/test_slurm_plugin_load.o: CPPFLAGS += -Islurm_plugin
