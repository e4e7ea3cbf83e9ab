#!/bin/bash
# Runs each integration test script given on the command line (in order).
# A script exits 0 (pass), 77 (skip: it cannot run here; its last "SKIP:"
# line says why) or other (fail). The skip rule, ISLE_STRICT=1 and the list
# of allowed skips: tests/runlib.sh, tests/SKIPS. Prints a closing
# "integration: N passed, N failed, N skipped" line; exits non-zero on a
# failure and when no test passed (all skipped, or none given).
set -u
# shellcheck source=tests/runlib.sh
source "$(dirname "$0")/runlib.sh"
pass=0 fail=0 skip=0 failed=()
# Which Slurm (make exports ISLE_SLURM_PREFIX for the release it selected).
if [ -n "${ISLE_SLURM_PREFIX:-}" ] && [ -x "$ISLE_SLURM_PREFIX/sbin/slurmctld" ]; then
	echo "integration: $("$ISLE_SLURM_PREFIX/sbin/slurmctld" -V) in $ISLE_SLURM_PREFIX"
fi
[ "${ISLE_STRICT:-0}" = 1 ] && echo "integration: ISLE_STRICT=1: a skip not listed in $ISLE_SKIPS_FILE fails"
log=$(mktemp "${TMPDIR:-/tmp}/isle-integ.XXXXXX")
pid=
trap 'rm -f "$log"' EXIT
trap '[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; exit 130' INT TERM
for t in "$@"; do
	name=$(basename "$t" .sh)
	echo "=== integration: $name"
	start=$(date +%s)
	# The output goes to a file as well (for the SKIP: line), through tail,
	# not a pipe: a daemon a test leaves behind holding its stdout would
	# keep a pipe open and the runner waiting.
	: >"$log"
	bash "$t" >"$log" 2>&1 &
	pid=$!
	tail -s 0.2 -n +1 -f --pid="$pid" "$log"
	wait "$pid"; rc=$?
	pid=
	dur=$(($(date +%s) - start))
	if [ $rc = 77 ]; then
		reason=$(grep -Ei '(^|: )skip:' "$log" | tail -1)
		if isle_skip_check "$name" "$reason"; then
			skip=$((skip + 1)); echo "--- SKIP $name (${dur}s)"
			continue
		fi
	fi
	case $rc in
	0) pass=$((pass + 1)); echo "--- PASS $name (${dur}s)" ;;
	*) fail=$((fail + 1)); failed+=("$name"); echo "--- FAIL $name rc=$rc (${dur}s)" ;;
	esac
done
isle_suite_end integration "$pass" "$fail" "$skip" "${failed[@]}"
