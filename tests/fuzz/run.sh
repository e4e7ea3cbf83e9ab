#!/bin/bash
# Runs libFuzzer targets one after another: run.sh BUILD_DIR SECONDS TARGET...
# Seeds each corpus ($BUILD_DIR/corpus/TARGET) from tests/fuzz/inputs,
# tests/golden and the shared data (ISLE_TEST_DATA, default ../shared/data),
# writes crashes to $BUILD_DIR/crashes/TARGET/ and prints one line per
# target: executions, seconds, executions per second, crashes.
set -u
dir=$1 secs=$2
shift 2
data=${ISLE_TEST_DATA:-$(cd "$(dirname "$0")/../.." && pwd)/../shared/data}
top=$(cd "$(dirname "$0")/../.." && pwd)
status=0

# copy PREFIX_BYTE_OCTAL DEST FILE...: seeds a corpus, each file behind a
# selector byte ("" for none).
seed() {
	local pre=$1 dest=$2 f
	shift 2
	for f in "$@"; do
		[ -f "$f" ] || continue
		{ [ -n "$pre" ] && printf "\\$pre"; cat "$f"; } \
			>"$dest/seed-$pre-$(basename "$f")"
	done
}

for t in "$@"; do
	bin=$dir/bin/fuzz_$t corpus=$dir/corpus/$t crashes=$dir/crashes/$t
	mkdir -p "$corpus" "$crashes"
	cp -n "$top"/tests/fuzz/inputs/"$t"/* "$corpus"/ 2>/dev/null
	case $t in
	ibnd)
		seed 000 "$corpus" "$data"/ibnetdiscover/*.out \
			"$data"/ibnetdiscover/*.topofile "$top"/tests/golden/ibnd/*.net \
			"$top"/tests/golden/ibnd/*.out
		seed 001 "$corpus" "$top"/tests/golden/ibnd/small.net
		# dump, NUL, GUID map, NUL, spine list
		[ -f "$data"/ibnetdiscover/X5.topofile ] &&
			{ printf '\000'; cat "$data"/ibnetdiscover/X5.topofile
			  printf '\000'; cat "$data"/ibnetdiscover/X5.map
			  printf '\000'; cat "$data"/ibnetdiscover/X5.spine; } \
				>"$corpus/seed-x5-map-spine" ;;
	cluster)
		seed "" "$corpus" "$top"/tests/golden/topology/*.json \
			"$top"/tests/crosscheck/cluster.json ;;
	node_json) seed "" "$corpus" "$top"/tests/golden/discover/*.json ;;
	hwloc_xml) seed "" "$corpus" "$data"/hwloc/*.xml "$top"/tests/golden/discover/*.xml ;;
	plan) seed "" "$corpus" "$top"/tests/golden/plan/*.json ;;
	opts)
		for s in none fp16 bf16 int8 int8:64 topk:0.01 topk:0.5,noef; do
			printf '\000%s' "$s" >"$corpus/seed-codec-$s"
		done
		printf '\001%s' "default_tp=8 allowed_codecs=none,int8 max_tp=16 shim=/usr/lib/x.so rundir=/run/isle/%n" >"$corpus/seed-policy"
		printf '\002%s' "gpu:a100:4(IDX:0-3),gpu:h100:2(IDX:4,6)" >"$corpus/seed-gres"
		printf '\003preferred' >"$corpus/seed-mode"
		i=0
		for v in 8 2 required leaf int8:128 off; do
			printf "\\$(printf %03o $((4 + 8 * i)))%s" "$v" >"$corpus/seed-opt-$i"
			i=$((i + 1))
		done ;;
	esac
	log=$dir/fuzz-$t.log
	echo "fuzz: $t for ${secs}s ($(ls "$corpus" | wc -l) corpus files)"
	# Leaks in hwloc's XML backend are not isle's.
	extra=()
	[ "$t" = hwloc_xml ] && extra=(-detect_leaks=0)
	"$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
		-max_len=262144 -print_final_stats=1 "${extra[@]}" \
		-artifact_prefix="$crashes/" "$corpus" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	# slow-unit-* are inputs that took over 10 s (libFuzzer's report
	# threshold, load included): kept for a look, not failures.
	ncr=$(ls "$crashes" | grep -vc '^slow-unit-')
	nslow=$(ls "$crashes" | grep -c '^slow-unit-')
	echo "fuzz: $t: ${execs:-?} executions in ${secs}s ($(( ${execs:-0} / (secs > 0 ? secs : 1) ))/s), exit $rc, $ncr crash files and $nslow slow inputs in $crashes"
	if [ $rc -ne 0 ]; then
		status=1
		grep -E 'ERROR|SUMMARY|runtime error|abort|#[0-9]+ 0x' "$log" | head -20
	fi
done
exit $status
