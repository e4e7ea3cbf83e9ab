# fuzz module: libFuzzer targets for isle's input readers (tests/fuzz/).
#
#   make fuzz                 builds the targets with clang (ASan + UBSan +
#                             libFuzzer) in $(B)/fuzz and runs each for
#                             FUZZ_S seconds (default 60), one at a time
#   make fuzz FUZZ_S=600 FUZZ_TARGETS="ibnd plan"
#
# The same sources built with the normal compiler link tests/fuzz/replay.c
# instead: $(B)/tests/fuzz_replay_TARGET, a unit test replaying the
# committed seeds and crash regressions under tests/fuzz/inputs/TARGET.
# Corpora are seeded from tests/golden and ../shared/data (run.sh) and kept
# in $(B)/fuzz/corpus; crashes land in $(B)/fuzz/crashes.

FUZZ_TARGETS ?= ibnd cluster node_json hwloc_xml plan opts codec name exporter
FUZZ_S       ?= 60
FUZZ_CC      ?= clang

# Per target: extra objects, static libraries, libraries.
FUZZ_X_opts       := $(B)/tests/fuzz/fuzz_opts_codec.o \
		     $(B)/slurm_plugin/spank_opts.o $(B)/slurm_plugin/spank_gres.o
FUZZ_A_ibnd       := $(B)/libisle_topo.a
FUZZ_A_cluster    := $(B)/libisle_place.a $(B)/libisle_topo.a
FUZZ_A_node_json  := $(B)/libisle_topo.a
FUZZ_A_hwloc_xml  := $(B)/libisle_agent.a $(B)/libisle_topo.a $(B)/libisle_proto.a
FUZZ_A_plan       := $(B)/libisle_comm.a $(B)/libisle_proto.a
FUZZ_A_opts       := $(B)/libisle_comm.a $(B)/libisle_place.a $(B)/libisle_topo.a \
		     $(B)/libisle_proto.a
FUZZ_A_codec      := $(B)/libisle_comm.a $(B)/libisle_proto.a
FUZZ_A_name       := $(B)/libisle_topo.a $(B)/libisle_proto.a
FUZZ_A_exporter   := $(B)/libisle_exporter.a $(B)/libisle_place.a \
		     $(B)/libisle_topo.a $(B)/libisle_proto.a
FUZZ_L_ibnd       := $(TOPO_LDLIBS)
FUZZ_L_cluster    := $(TOPO_LDLIBS) -lm
FUZZ_L_node_json  := $(TOPO_LDLIBS)
FUZZ_L_hwloc_xml  := $(AGENT_LDLIBS) $(TOPO_LDLIBS)
FUZZ_L_plan       := $(COMM_LDLIBS)
FUZZ_L_opts       := $(COMM_LDLIBS) $(TOPO_LDLIBS)
FUZZ_L_codec      := $(COMM_LDLIBS)
FUZZ_L_name       := $(TOPO_LDLIBS)
FUZZ_L_exporter   := $(EXPORTER_LDLIBS)

ALL_OBJS += $(FUZZ_TARGETS:%=$(B)/tests/fuzz/fuzz_%.o) $(FUZZ_X_opts)
$(B)/tests/fuzz/%.o: CPPFLAGS += -Itests/fuzz -Islurm_plugin -Iexporter

ifeq ($(FUZZ_BUILD),1)
# Sub-make of `make fuzz` (CC=clang, B=$(B)/fuzz): everything instrumented.
CFLAGS  += -fsanitize=fuzzer-no-link,address,undefined \
	   -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined

define FUZZ_BIN
$(B)/bin/fuzz_$(1): $(B)/tests/fuzz/fuzz_$(1).o $(FUZZ_X_$(1)) $(FUZZ_A_$(1))
	@mkdir -p $$(dir $$@)
	$$(CC) $$(LDFLAGS) -fsanitize=fuzzer -o $$@ $$^ $(FUZZ_L_$(1)) $$(LDLIBS)
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call FUZZ_BIN,$(t))))
.PHONY: fuzz-bins
fuzz-bins: $(FUZZ_TARGETS:%=$(B)/bin/fuzz_%)
else
define FUZZ_REPLAY
$(B)/tests/fuzz/replay_$(1).o: tests/fuzz/replay.c | $$(DEPS_OK)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CPPFLAGS) -Itests/fuzz \
		-DFUZZ_INPUT_DIR='"$$(CURDIR)/tests/fuzz/inputs/$(1)"' \
		-DFUZZ_NAME='"fuzz_replay_$(1)"' $$(CFLAGS) -c -o $$@ $$<
$(B)/tests/fuzz_replay_$(1): $(B)/tests/fuzz/fuzz_$(1).o \
		$(B)/tests/fuzz/replay_$(1).o $(FUZZ_X_$(1)) $(FUZZ_A_$(1))
	@mkdir -p $$(dir $$@)
	$$(CC) $$(LDFLAGS) -o $$@ $$^ $(FUZZ_L_$(1)) $$(CMOCKA_LIBS) $$(LDLIBS)
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call FUZZ_REPLAY,$(t))))
UNIT_TESTS += $(FUZZ_TARGETS:%=$(B)/tests/fuzz_replay_%)
endif

.PHONY: fuzz
fuzz: | $(DEPS_OK)
	@command -v $(FUZZ_CC) >/dev/null || { echo "make fuzz: no $(FUZZ_CC);" \
		"scripts/deps.sh installs clang and libclang-rt-14-dev"; exit 2; }
	+$(MAKE) --no-print-directory B=$(B)/fuzz FUZZ_BUILD=1 CC=$(FUZZ_CC) \
		HAVE_MPI=0 SANITIZE= DEPS_OK=$(DEPS_OK) fuzz-bins
	@tests/fuzz/run.sh $(B)/fuzz $(FUZZ_S) $(FUZZ_TARGETS)
