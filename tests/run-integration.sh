#!/bin/bash
# Runs each integration test script given on the command line (in order).
# A script exits 0 (pass), 77 (skip, with its reason printed) or other (fail).
# Prints a closing "integration: N passed, N failed, N skipped" line.
set -u
pass=0 fail=0 skip=0 failed=()
# Which Slurm (make exports ISLE_SLURM_PREFIX for the release it selected).
if [ -n "${ISLE_SLURM_PREFIX:-}" ] && [ -x "$ISLE_SLURM_PREFIX/sbin/slurmctld" ]; then
	echo "integration: $("$ISLE_SLURM_PREFIX/sbin/slurmctld" -V) in $ISLE_SLURM_PREFIX"
fi
for t in "$@"; do
	name=$(basename "$t" .sh)
	echo "=== integration: $name"
	start=$(date +%s)
	bash "$t"; rc=$?
	dur=$(($(date +%s) - start))
	case $rc in
	0) pass=$((pass + 1)); echo "--- PASS $name (${dur}s)" ;;
	77) skip=$((skip + 1)); echo "--- SKIP $name (${dur}s)" ;;
	*) fail=$((fail + 1)); failed+=("$name"); echo "--- FAIL $name rc=$rc (${dur}s)" ;;
	esac
done
[ ${#failed[@]} -gt 0 ] && echo "integration: failing: ${failed[*]}"
echo "integration: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
