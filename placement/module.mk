# placement module: the placement engine (libisle_place.a), islesim, the
# unit tests and the bench-placement benchmark.

PLACE_SRCS := placement/engine.c placement/tree.c placement/fill.c \
	      placement/exact.c placement/cost.c placement/util.c \
	      placement/contention.c
PLACE_OBJS := $(PLACE_SRCS:%.c=$(B)/%.o)
LIBS_A     += $(B)/libisle_place.a
ALL_OBJS   += $(PLACE_OBJS)
$(B)/libisle_place.a: $(PLACE_OBJS)

# islesim: the discrete-event simulator (placement/sim/).
ISLESIM_SRCS := $(wildcard placement/sim/*.c)
ISLESIM_OBJS := $(ISLESIM_SRCS:%.c=$(B)/%.o)
BINS         += $(B)/bin/islesim
ALL_OBJS     += $(ISLESIM_OBJS)
$(B)/bin/islesim: $(ISLESIM_OBJS) $(B)/libisle_place.a $(B)/libisle_topo.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(ISLESIM_OBJS) $(B)/libisle_place.a \
		$(B)/libisle_topo.a $(TOPO_LDLIBS) -lm $(LDLIBS)

# Unit tests (cmocka). test_place_sim also links islesim's parts.
PLACE_TESTS := $(B)/tests/test_place_engine $(B)/tests/test_place_optimum \
	       $(B)/tests/test_place_contention
UNIT_TESTS  += $(PLACE_TESTS) $(B)/tests/test_place_sim \
	       $(B)/tests/test_place_shim
$(PLACE_TESTS): $(B)/tests/%: $(B)/tests/unit/%.o $(B)/libisle_place.a \
		$(B)/libisle_topo.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(TOPO_LDLIBS) $(CMOCKA_LIBS) -lm $(LDLIBS)

# Benchmark: isle against the baseline policies on the four clusters under
# the four mixes (wait by job size class per row), and
# decision time at 1,000 and 10,000 nodes. Writes build/bench/placement.json,
# placement.txt (the table) and placement.png (gnuplot).
PLACE_BENCH_JOBS ?= 2000
BENCHES += bench-placement
.PHONY: bench-placement
bench-placement: $(B)/bin/islesim
	@mkdir -p $(B)/bench
	@bench/stamp.sh $(B)/bench/placement.json -- \
		$(B)/bin/islesim --bench $(B)/bench --jobs $(PLACE_BENCH_JOBS) \
		--commit "$$(git describe --always --dirty 2>/dev/null || echo unknown)" \
		--data "$${ISLE_TEST_DATA:-$(CURDIR)/../shared/data}" \
		| tee $(B)/bench/placement.txt
	@gnuplot $(B)/bench/placement.gp && echo "plot: $(B)/bench/placement.png"

# isle against isle-cc (contention-aware) on roce2, roce4 and lingjun at
# loads 0.7 and 0.9 and superpod, nvl72 and pcie at 0.9, and isle-cc's
# decision time at 1,000 and 10,000 nodes: build/bench/contention.json,
# contention.txt (the table and the verdict on issue 27's goals; a miss is
# reported, not a failed make bench).
BENCHES += bench-contention
.PHONY: bench-contention
bench-contention: $(B)/bin/islesim
	@mkdir -p $(B)/bench
	@bench/stamp.sh $(B)/bench/contention.json -- \
		$(B)/bin/islesim --bench-contention $(B)/bench \
		--jobs $(PLACE_BENCH_JOBS) \
		--commit "$$(git describe --always --dirty 2>/dev/null || echo unknown)" \
		--data "$${ISLE_TEST_DATA:-$(CURDIR)/../shared/data}" \
		| tee $(B)/bench/contention.txt

# Issue 26's one results table: superpod, nvl72, pcie, lingjun, roce2 and
# roce4 under tree, block, isle, isle-cc and isle+shim, 3 seeds, the mix
# PLACE_TABLE_MIX (empty: all four), and the verdict on the issue's goals
# (a miss is reported, not a failed make bench). Writes
# docs/results/placement-table.{json,md,svg}; commit it from a clean tree.
PLACE_TABLE_MIX ?= kalos
PLACE_TABLE_DIR ?= docs/results
BENCHES += bench-placement-table
.PHONY: bench-placement-table
bench-placement-table: $(B)/bin/islesim
	@mkdir -p $(PLACE_TABLE_DIR)
	@bench/stamp.sh $(PLACE_TABLE_DIR)/placement-table.json -- \
		$(B)/bin/islesim --bench-table $(PLACE_TABLE_DIR) \
		--jobs $(PLACE_BENCH_JOBS) $(if $(PLACE_TABLE_MIX),--mix $(PLACE_TABLE_MIX)) \
		--commit "$$(git describe --always --dirty 2>/dev/null || echo unknown)" \
		--data "$${ISLE_TEST_DATA:-$(CURDIR)/../shared/data}"
	@printf '\nHost idle CPU over the run: %s%%.\n' \
		"$$(jq -r .cpu_idle_pct $(PLACE_TABLE_DIR)/placement-table.json)" \
		>>$(PLACE_TABLE_DIR)/placement-table.md

# The goal of issue 25 on islesim's output (bench/placement/wait-class.sh):
# per size class isle <= 1.1 x min(tree, block) + 60 s, GPU-weighted wait
# <= the best baseline's, step <= 1.01 x min(tree, block), 4 clusters x 4
# mixes. The verdict goes to $(B)/bench/wait-class.txt; a miss is reported,
# not a failed make bench.
BENCHES += bench-wait-class
.PHONY: bench-wait-class
bench-wait-class: $(B)/bin/islesim
	@mkdir -p $(B)/bench
	@rc=0; bash bench/placement/wait-class.sh >$(B)/bench/wait-class.txt || rc=$$?; \
		cat $(B)/bench/wait-class.txt; \
		[ $$rc -eq 0 ] || echo "bench-wait-class: a bound of issue 25 missed (exit $$rc)"

$(B)/tests/unit/test_place_sim.o $(B)/tests/unit/test_place_shim.o: \
	CPPFLAGS += -Iplacement/sim
$(B)/tests/test_place_sim $(B)/tests/test_place_shim: $(B)/tests/%: \
		$(B)/tests/unit/%.o \
		$(filter-out %/main.o,$(ISLESIM_OBJS)) $(B)/libisle_place.a \
		$(B)/libisle_topo.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(TOPO_LDLIBS) $(CMOCKA_LIBS) -lm $(LDLIBS)

# The heuristic (clusters over 64 nodes) against the exhaustive optimum on
# mid-size instances: the gap distribution per cluster kind, one JSON line
# each, in $(B)/bench/place-gap.jsonl (tests/unit/test_place_optimum.c).
BENCHES += bench-place-gap
.PHONY: bench-place-gap
bench-place-gap: $(B)/tests/test_place_optimum
	@mkdir -p $(B)/bench
	@rm -f $(B)/bench/place-gap.jsonl
	@ISLE_GAP_OUT=$(CURDIR)/$(B)/bench/place-gap.jsonl bench/stamp.sh $(B)/bench/place-gap.jsonl -- \
		$(B)/tests/test_place_optimum 2>&1 | grep -E '^mid|PASSED|FAILED'
	@echo "wrote $(B)/bench/place-gap.jsonl"
