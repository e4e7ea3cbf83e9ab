# exporter module: isle-exporter, placement quality as OpenMetrics over
# libmicrohttpd (exporter/isle_exporter.h, docs/exporter.md), its unit test
# and bench-exporter.

EXPORTER_SRCS := exporter/sources.c exporter/store.c exporter/render.c
EXPORTER_OBJS := $(EXPORTER_SRCS:%.c=$(B)/%.o)
ALL_OBJS      += $(EXPORTER_OBJS) $(B)/exporter/main.o
EXPORTER_LDLIBS := $(TOPO_LDLIBS) -lm
$(B)/exporter/%.o: CPPFLAGS += -Iexporter

LIBS_A += $(B)/libisle_exporter.a
$(B)/libisle_exporter.a: $(EXPORTER_OBJS)

BINS += $(B)/bin/isle-exporter
$(B)/bin/isle-exporter: $(B)/exporter/main.o $(B)/libisle_exporter.a \
		$(B)/libisle_place.a $(B)/libisle_topo.a $(B)/libisle_proto.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(filter %.a,$^) \
		-lmicrohttpd $(EXPORTER_LDLIBS) $(LDLIBS)

UNIT_TESTS += $(B)/tests/test_exporter
$(B)/tests/unit/test_exporter.o: CPPFLAGS += -Iexporter \
	-DPROTO_GOLDEN_DIR='"$(CURDIR)/tests/golden/proto"'
$(B)/tests/test_exporter: $(B)/tests/unit/test_exporter.o \
		$(B)/libisle_exporter.a $(B)/libisle_place.a \
		$(B)/libisle_topo.a $(B)/libisle_proto.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(EXPORTER_LDLIBS) $(CMOCKA_LIBS) $(LDLIBS)

# Scrape time at 10,000 nodes and 100,000 decision records
# (exporter/bench.sh): build/bench/exporter.json.
BENCHES += bench-exporter
.PHONY: bench-exporter
bench-exporter: $(B)/bin/isle-exporter $(B)/bin/islectl
	@mkdir -p $(B)/bench
	@exporter/bench.sh $(B) $(B)/bench/exporter.json

# The shim reports source with 100,000 reports arriving at once
# (exporter/bench-reports.sh): build/bench/exporter-reports.json.
BENCHES += bench-exporter-reports
.PHONY: bench-exporter-reports
bench-exporter-reports: $(B)/bin/isle-exporter
	@mkdir -p $(B)/bench
	@exporter/bench-reports.sh $(B) $(B)/bench/exporter-reports.json
