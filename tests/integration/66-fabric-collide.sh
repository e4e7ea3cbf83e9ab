#!/bin/bash
# 66-fabric-collide: bench/fabric/run.sh --scenario collide, the collision
# scenario of contention-aware placement, runs as designed (correctness
# only, never time):
#  - both jobs of every run completed with verified sums, and job A ran
#    from before job B started until after it ended;
#  - A crosses the uplinks of two leafs; the hand-placed "share" run puts B
#    on both of them, "avoid" on neither; under topology/isle B crosses the
#    spine too (every leaf has one free node when it comes);
#  - the spine cables carried at least A's gradient allreduces;
#  - isle-cc ran, or the result file says why not (a build whose
#    plugin has no TopologyParam=IsleContentionWeight);
#  - the result file records its commit and host CPU idle;
#  - nothing of any run is left: run dir, namespaces, processes.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/integration/lib/fabric-bench.sh
source "$repo/tests/integration/lib/fabric-bench.sh"

steps=3
f=$work/collide.json
isle_fabric_bench_run "$f" 40 --scenario collide --seeds 1 --steps $steps
jq -e '(.commit | type) == "string" and (.cpu_idle_pct | type) == "number"' "$f" >/dev/null ||
	fail "result file lacks commit or cpu_idle_pct"

for cfg in isle share avoid; do
	r=$(jq -c --arg c "$cfg" '.runs[] | select(.config == $c)' "$f")
	[ -n "$r" ] || { fail "$cfg: no run"; continue; }
	jq -e '.ok and .overlap and .a.state == "COMPLETED" and .b.state == "COMPLETED"' <<<"$r" >/dev/null ||
		fail "$cfg: jobs not both completed, or B not inside A: $r"
	na=$(jq '.a.step_ms | length' <<<"$r")
	nb=$(jq '.b.step_ms | length' <<<"$r")
	# Records after the first step: A 2 x steps + 4, B steps.
	[ "$na" = $((2 * steps + 3)) ] && [ "$nb" = $((steps - 1)) ] ||
		fail "$cfg: $na and $nb step records (want $((2 * steps + 3)) and $((steps - 1)))"
	jq -e '(.a_uplinks | length) == 2 and (.b_uplinks | length) == 2 and (.cpu_idle_pct | type) == "number"' <<<"$r" >/dev/null ||
		fail "$cfg: A and B do not both cross the spine: $(jq -c '[.a.hosts, .b.hosts]' <<<"$r")"
	# A's gradients (2 ranks per node, each ring of 2 sends its whole
	# buffer) cross the spine every step: at least once over its cables.
	jq -e --argjson s $((2 * steps + 4)) --arg sc "$(jq .scale "$f")" \
		'.link_bytes_by_tier.spine >= $s * 4 * (3.5e9 * 2 * ($sc | tonumber))' <<<"$r" >/dev/null ||
		fail "$cfg: spine cables carried $(jq .link_bytes_by_tier.spine <<<"$r") bytes, less than A's gradients"
	echo "ok   $cfg: A on $(jq -c .a.hosts <<<"$r"), B on $(jq -c .b.hosts <<<"$r"), shared uplinks $(jq -c .shared_uplinks <<<"$r")"
done
jq -e '[.runs[] | select(.config == "share")][0].shared_uplinks | length == 2' "$f" >/dev/null ||
	fail "share: B does not share both of A's uplinks"
jq -e '[.runs[] | select(.config == "avoid")][0].shared_uplinks | length == 0' "$f" >/dev/null ||
	fail "avoid: B shares an uplink with A"
if jq -e '[.runs[] | select(.config == "isle-cc")] | length == 1' "$f" >/dev/null; then
	jq -e '[.runs[] | select(.config == "isle-cc")][0] | .ok and .overlap' "$f" >/dev/null ||
		fail "isle-cc: jobs not both completed"
	echo "ok   isle-cc ran"
else
	jq -e '.not_run[] | select(.config == "isle-cc") | .not_run | test("IsleContentionWeight")' "$f" >/dev/null ||
		fail "isle-cc neither ran nor says why"
	echo "ok   isle-cc not run: $(jq -r '.not_run[0].not_run' "$f")"
fi

isle_fabric_bench_leftovers
isle_fabric_bench_end
