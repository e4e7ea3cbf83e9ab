#!/bin/bash
# Runs each cmocka test binary given on the command line, prints cmocka's
# own summary lines, the "SKIP:" lines tests print to say what they missed,
# and a closing "unit: N passed, N failed, N skipped" line. Skipped counts
# cmocka's skipped tests and whole binaries that exit 77. The skip rule and
# ISLE_STRICT=1: tests/runlib.sh; a skipped test's name there is
# BINARY:TEST (or BINARY for one that exits 77), its reason the last
# "SKIP:" line it printed.
set -u
# shellcheck source=tests/runlib.sh
source "$(dirname "$0")/runlib.sh"
pass=0 fail=0 skipped=0 failed=()
# Judges one skip: counted as skipped, or as failed (and its binary listed).
judge_skip() { # BINARY NAME REASON
	if isle_skip_check "$2" "$3"; then
		skipped=$((skipped + 1))
	else
		fail=$((fail + 1))
		[[ " ${failed[*]} " == *" $1 "* ]] || failed+=("$1")
	fi
}
export CMOCKA_MESSAGE_OUTPUT=stdout
for t in "$@"; do
	[ -x "$t" ] || { echo "run-unit: $t not built"; fail=$((fail + 1)); failed+=("$t"); continue; }
	echo "=== $(basename "$t")"
	out=$("$t" 2>&1); rc=$?
	if [ $rc -eq 77 ]; then
		reason=$(echo "$out" | grep -E '^SKIP' | tail -1)
		echo "${reason:=SKIP: $(basename "$t") (no reason given)}"
		judge_skip "$(basename "$t")" "$(basename "$t")" "$reason"
		continue
	fi
	echo "$out" | grep -E '^\[ *(PASSED|FAILED|  ERROR|ERROR|SKIPPED) *\]|^\[==========\]|^\[  FAILED  \]|^SKIP:' || true
	[ $rc -ne 0 ] && echo "$out" | tail -40
	n_ok=$(echo "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END{print s+0}')
	n_bad=$(echo "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END{print s+0}')
	pass=$((pass + n_ok)); fail=$((fail + n_bad))
	# Each skipped test with the last SKIP: line it printed.
	while IFS=$'\t' read -r tname reason; do
		[ -n "$tname" ] && judge_skip "$(basename "$t")" "$(basename "$t"):$tname" "$reason"
	done < <(echo "$out" | awk '
		/^\[ RUN      \] / { cur = $4; r = "" }
		/^SKIP:/ { r = $0 }
		/^\[  SKIPPED \] [^0-9]/ && cur != "" && $4 == cur {
			print cur "\t" (r == "" ? "(no reason given)" : r); cur = ""
		}')
	if [ $rc -ne 0 ]; then
		[ "$n_bad" = 0 ] && fail=$((fail + 1))
		[[ " ${failed[*]} " == *" $(basename "$t") "* ]] || failed+=("$(basename "$t")")
	fi
done
isle_suite_end unit "$pass" "$fail" "$skipped" "${failed[@]}"
