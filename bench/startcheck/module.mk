# bench/startcheck: start times of real Slurm (sched/backfill) against
# islesim's replay of the same trace, under tree, block and isle
# (bench/startcheck/run.sh, docs/startcheck.md).
#   make bench-startcheck  -> $(B)/bench/startcheck.json, startcheck-jobs.tsv,
#                             and "startcheck" in $(B)/bench/placement.json
#                             when bench-placement wrote one
# Not in BENCHES: 200 jobs take tens of minutes; run it on its own.
.PHONY: bench-startcheck
bench-startcheck: $(PLUGINS) $(BINS)
	@mkdir -p $(B)/bench
	@nice -n 10 bench/startcheck/run.sh $(B)/bench/startcheck.json; rc=$$?; \
		if [ $$rc = 77 ]; then echo "bench-startcheck: skipped"; exit 0; fi; \
		[ $$rc = 0 ] || exit $$rc; \
		if [ -f $(B)/bench/placement.json ]; then bench/startcheck/merge.sh \
			$(B)/bench/startcheck.json $(B)/bench/placement.json; \
		else echo "bench-startcheck: no $(B)/bench/placement.json (make bench-placement, then bench/startcheck/merge.sh)"; fi
