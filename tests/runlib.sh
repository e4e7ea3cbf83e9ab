# shellcheck shell=bash
# tests/runlib.sh: what tests/run-unit.sh and tests/run-integration.sh
# share (sourced by both): the skip rule and the closing line.
#
# A skip says "this cannot run here", with a reason line ("SKIP: ..."). A
# missing build output is no reason: make builds before it tests, so that
# is a failure. With ISLE_STRICT=1 (.ci/run) every skip fails unless
# tests/SKIPS lists it: the test's name and a pattern its reason must match.
#
#   isle_skip_check NAME REASON   0 when the skip stands (prints "skip
#       allowed: WHY" under ISLE_STRICT=1), 1 when it counts as a failure
#       (prints why).
#   isle_suite_end SUITE PASS FAIL SKIP FAILED...   prints the failing names
#       and "SUITE: N passed, N failed, N skipped"; 0 when nothing failed
#       and something passed.

ISLE_SKIPS_FILE=${ISLE_SKIPS_FILE:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/SKIPS}

# Prints the WHY of the first entry of tests/SKIPS for NAME whose pattern
# REASON matches; 1 when none does, 2 when an entry is malformed.
isle__skip_listed() {
	local name=$1 reason=$2 line n rest when why lineno=0
	[ -r "$ISLE_SKIPS_FILE" ] || { echo "$ISLE_SKIPS_FILE: cannot read"; return 2; }
	while IFS= read -r line || [ -n "$line" ]; do
		lineno=$((lineno + 1))
		case $line in '' | '#'*) continue ;; esac
		n=${line%% | *} rest=${line#* | }
		when=${rest%% | *} why=${rest#* | }
		if [ "$n" = "$line" ] || [ "$when" = "$rest" ] || [ -z "$n" ] ||
			[ -z "$when" ] || [ -z "$why" ]; then
			echo "$ISLE_SKIPS_FILE:$lineno: not 'NAME | PATTERN | WHY'"
			return 2
		fi
		[ "$n" = "$name" ] || continue
		if printf '%s\n' "$reason" | grep -Eq -- "$when"; then
			printf '%s\n' "$why"
			return 0
		fi
	done <"$ISLE_SKIPS_FILE"
	return 1
}

isle_skip_check() {
	local name=$1 reason=$2 why rc
	if [ -z "$reason" ]; then
		echo "$name: skipped without a reason (no SKIP: line): counted as a failure"
		return 1
	fi
	[ "${ISLE_STRICT:-0}" = 1 ] || return 0
	why=$(isle__skip_listed "$name" "$reason")
	rc=$?
	case $rc in
	0) echo "$name: skip allowed ($ISLE_SKIPS_FILE): $why" ;;
	1) echo "$name: ISLE_STRICT=1 and $ISLE_SKIPS_FILE does not list this skip: counted as a failure" ;;
	*) echo "$why" ;;
	esac
	return $rc
}

isle_suite_end() {
	local suite=$1 pass=$2 fail=$3 skip=$4
	shift 4
	[ $# = 0 ] || echo "$suite: failing: $*"
	echo "$suite: $pass passed, $fail failed, $skip skipped"
	if [ "$fail" = 0 ] && [ "$pass" = 0 ]; then
		echo "$suite: no test passed: nothing was tested"
		return 1
	fi
	[ "$fail" = 0 ]
}
