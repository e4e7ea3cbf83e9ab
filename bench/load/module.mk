# bench/load: 2,000 short jobs of mixed sizes on a 32-node test cluster under
# topology/isle and topology/tree (bench/load/run.sh).
#   make bench-load    -> $(B)/bench/load.json
# Not in BENCHES: it takes tens of minutes; run it on its own, nice'd.
.PHONY: bench-load
bench-load: $(PLUGINS) $(BINS)
	@mkdir -p $(B)/bench
	@nice -n 10 bench/load/run.sh $(B)/bench/load.json; rc=$$?; \
		if [ $$rc = 77 ]; then echo "bench-load: skipped"; else exit $$rc; fi
