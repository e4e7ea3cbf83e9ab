# bench/fabric: real Slurm placing real MPI jobs on an emulated fabric
# (tests/cluster/fabric.sh), isle against topology/tree and topology/block.
#   $(B)/bench/fabric_job   the MPI job program (bench/fabric/fabric_job.c)
#   make bench-fabric       bench/fabric/run.sh -> $(B)/bench/fabric.json + .png,
#                           then islesim --replay-fabric: predicted against
#                           measured step per configuration (fabric-calib.txt);
#                           the tables (bench/fabric/table.sh) in fabric.md
ifeq ($(HAVE_MPI),1)
BINS_FABRIC := $(B)/bench/fabric_job
$(B)/bench/fabric/fabric_job.o: CPPFLAGS += $(MPI_CPPFLAGS)
$(B)/bench/fabric_job: $(B)/bench/fabric/fabric_job.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(MPI_LDLIBS) -lm
all: $(BINS_FABRIC)
endif

BENCHES += bench-fabric
.PHONY: bench-fabric
bench-fabric: all
	@mkdir -p $(B)/bench
	@B=$(CURDIR)/$(B) bench/fabric/run.sh --out $(B)/bench/fabric.json; rc=$$?; \
		if [ $$rc = 77 ]; then echo "bench-fabric: skipped"; exit 0; fi; \
		bench/fabric/table.sh $(B)/bench/fabric.json | tee $(B)/bench/fabric.md; \
		echo "bench-fabric: islesim's flow model against these runs (calibration):"; \
		$(B)/bin/islesim --replay-fabric $(B)/bench/fabric.json --shape-dir bench/fabric \
			| tee $(B)/bench/fabric-calib.txt; exit $$rc
