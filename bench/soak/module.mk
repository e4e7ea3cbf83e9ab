# bench/soak: slurmctld's memory with topology/isle over many jobs and
# reconfigures (not a test: it measures).
#   make bench-soak [SOAK_ARGS="--jobs 2000 --reconfigures 50 --nodes 8"]
#     bench/soak/ctld_rss.sh -> $(B)/bench/ctld_rss.json
BENCHES += bench-soak
.PHONY: bench-soak
bench-soak: all
	@mkdir -p $(B)/bench
	@B=$(CURDIR)/$(B) nice bench/soak/ctld_rss.sh --out $(B)/bench/ctld_rss.json $(SOAK_ARGS); \
		rc=$$?; if [ $$rc = 77 ]; then echo "bench-soak: skipped"; else exit $$rc; fi
