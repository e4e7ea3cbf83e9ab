#!/bin/bash
# Runs each cmocka test binary given on the command line, prints cmocka's
# own summary lines, the "SKIP:" lines tests print to say what they missed,
# and a closing "unit: N passed, N failed, N skipped" line. Skipped counts
# cmocka's skipped tests and whole binaries that exit 77.
set -u
pass=0 fail=0 skipped=0 failed=()
export CMOCKA_MESSAGE_OUTPUT=stdout
for t in "$@"; do
	[ -x "$t" ] || { echo "run-unit: $t not built"; fail=$((fail + 1)); failed+=("$t"); continue; }
	echo "=== $(basename "$t")"
	out=$("$t" 2>&1); rc=$?
	if [ $rc -eq 77 ]; then
		echo "$out" | grep -E '^SKIP' || echo "SKIP: $(basename "$t") (no reason given)"
		skipped=$((skipped + 1))
		continue
	fi
	echo "$out" | grep -E '^\[ *(PASSED|FAILED|  ERROR|ERROR|SKIPPED) *\]|^\[==========\]|^\[  FAILED  \]|^SKIP:' || true
	[ $rc -ne 0 ] && echo "$out" | tail -40
	n_ok=$(echo "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END{print s+0}')
	n_bad=$(echo "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END{print s+0}')
	n_skip=$(echo "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END{print s+0}')
	pass=$((pass + n_ok)); fail=$((fail + n_bad)); skipped=$((skipped + n_skip))
	if [ $rc -ne 0 ]; then
		[ "$n_bad" = 0 ] && fail=$((fail + 1))
		failed+=("$(basename "$t")")
	fi
done
[ ${#failed[@]} -gt 0 ] && echo "unit: failing binaries: ${failed[*]}"
echo "unit: $pass passed, $fail failed, $skipped skipped"
[ $fail -eq 0 ]
