# proto module: libisle_proto.a, the formats that cross a process boundary
# (plan.json, codec specs, job options, run-dir names, cluster-file lookup,
# node JSON version, decision records; proto/isle_proto.h). json-c only: the
# agent, comm_shim (libislecomm.so and the MPI/NCCL backends), the Slurm
# plugins, islectl and the fuzz targets link it.

PROTO_SRCS := proto/plan.c proto/plan_scan.c proto/codec.c proto/jobopt.c \
	      proto/layout.c proto/rundir.c proto/name.c proto/report.c \
	      proto/errf.c
PROTO_OBJS := $(PROTO_SRCS:%.c=$(B)/%.o)
ALL_OBJS   += $(PROTO_OBJS)
PROTO_LDLIBS := -ljson-c

LIBS_A += $(B)/libisle_proto.a
$(B)/libisle_proto.a: $(PROTO_OBJS)

# Golden-file tests of every reader and writer (tests/golden/proto).
UNIT_TESTS += $(B)/tests/test_proto
$(B)/tests/unit/test_proto.o: CPPFLAGS += \
	-DPROTO_GOLDEN_DIR='"$(CURDIR)/tests/golden/proto"'
$(B)/tests/test_proto: $(B)/tests/unit/test_proto.o $(B)/libisle_proto.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(PROTO_LDLIBS) $(CMOCKA_LIBS) $(LDLIBS)

# The trusted run-dir walk and the name check (needs root for the
# ownership cases, skipped otherwise).
UNIT_TESTS += $(B)/tests/test_proto_rundir
$(B)/tests/test_proto_rundir: $(B)/tests/unit/test_proto_rundir.o \
			      $(B)/libisle_proto.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(PROTO_LDLIBS) $(CMOCKA_LIBS) $(LDLIBS)
