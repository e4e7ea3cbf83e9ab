#!/bin/bash
# bench/stamp.sh: what every benchmark result file records about its run,
# added in one place: "commit" (git describe --always --dirty of this
# checkout; ISLE_COMMIT overrides it, "unknown" outside a git checkout) and
# "cpu_idle_pct", the host's idle CPU share over the run (idle + iowait
# jiffies of all CPUs in /proc/stat, start to end), which says whether the
# figures measure the code or a busy host.
#
# Sourced by the benchmark scripts that write their JSON themselves:
#   isle_bench_begin            samples /proc/stat (the run's start)
#   isle_bench_stamp FILE...    adds both fields to FILE (a JSON object, or
#                               JSON lines: each line); a commit the file
#                               already has is kept
# Run as a command, for the programs that write JSON (make's bench targets):
#   bench/stamp.sh FILE... -- CMD [ARGS...]
#       runs CMD, then stamps each FILE that CMD wrote; exits with CMD's
#       status (a FILE CMD did not write is left alone).

isle__bench_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

isle__bench_cpu() { # prints "IDLE TOTAL" jiffies of all CPUs
	awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print $5 + $6, t; exit }' /proc/stat
}

isle_bench_commit() {
	[ -z "${ISLE_COMMIT:-}" ] || { echo "$ISLE_COMMIT"; return; }
	git -C "$isle__bench_repo" describe --always --dirty 2>/dev/null || echo unknown
}

isle_bench_begin() {
	isle__bench_cpu0=$(isle__bench_cpu)
}

isle_bench_stamp() {
	local f commit idle tmp has n
	[ -n "${isle__bench_cpu0:-}" ] || { echo "isle_bench_stamp: isle_bench_begin was not called" >&2; return 1; }
	commit=$(isle_bench_commit | jq -Rs 'rtrimstr("\n")')
	idle=$(echo "$isle__bench_cpu0 $(isle__bench_cpu)" |
		awk '{ t = $4 - $2; printf "%.1f", (t > 0 ? 100 * ($3 - $1) / t : 0) }')
	for f in "$@"; do
		tmp=$f.stamp.$$
		# Text inserted before each object's last "}", not jq's rewrite: the
		# writer's layout stays (tests grep comm.json's lines).
		has=$(jq -c 'if type == "object" then has("commit") else error("not an object") end' "$f" 2>/dev/null) &&
			n=$(echo "$has" | wc -l) &&
			awk -v has="$has" -v n="$n" -v c="$commit" -v i="$idle" '
				BEGIN { split(has, h, "\n") }
				{ l[NR] = $0 }
				function add(s, k,   a) {
					a = (h[k] == "true" ? "" : ", \"commit\": " c) ", \"cpu_idle_pct\": " i
					if (match(s, /\{[ \t]*\}[^}]*$/)) sub(/^, /, "", a)
					match(s, /}[^}]*$/)
					return substr(s, 1, RSTART - 1) a substr(s, RSTART)
				}
				END {
					if (n == NR) { for (k = 1; k <= NR; k++) print add(l[k], k); exit }
					for (k = NR; k > 0 && l[k] !~ /}/; k--) ;
					# A "}" of its own closes the object: the fields on a line above it.
					if (l[k] ~ /^[ \t]*}[ \t]*$/ && k > 1 && l[k - 1] !~ /[{,][ \t]*$/) {
						a = add("{}", 1); sub(/^\{/, "", a); sub(/}$/, "", a)
						l[k - 1] = l[k - 1] ",\n  " a
					} else
						l[k] = add(l[k], 1)
					for (j = 1; j <= NR; j++) print l[j]
				}' "$f" >"$tmp" &&
			[ "$(jq -c 'has("commit") and has("cpu_idle_pct")' "$tmp" 2>/dev/null | sort -u)" = true ] || {
			rm -f "$tmp"
			echo "isle_bench_stamp: $f: not a JSON object (or JSON lines of objects, one a line)" >&2
			return 1
		}
		mv -f "$tmp" "$f"
	done
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	files=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do files+=("$1"); shift; done
	if [ "${1:-}" != -- ] || [ $# -lt 2 ] || [ ${#files[@]} = 0 ]; then
		echo "usage: bench/stamp.sh FILE... -- CMD [ARGS...]" >&2
		exit 2
	fi
	shift
	# A file is stamped when this run wrote it (its change time moved).
	before=()
	for f in "${files[@]}"; do before+=("$(stat -c %z "$f" 2>/dev/null)"); done
	isle_bench_begin
	"$@"
	rc=$?
	for k in "${!files[@]}"; do
		f=${files[k]}
		if [ ! -f "$f" ] || [ "$(stat -c %z "$f")" = "${before[k]}" ]; then
			echo "bench/stamp.sh: $f not written by this run: not stamped" >&2
			continue
		fi
		isle_bench_stamp "$f" || [ $rc != 0 ] || rc=1
	done
	exit $rc
fi
