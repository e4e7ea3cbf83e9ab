#!/bin/bash
# 67-comm-report: the shim's per-job report (ISLE_REPORT=1, ISLE_REPORT_FILE;
# docs/comm-shim.md) under real Open MPI and MPICH (mpirun, shared memory),
# read back through proto's reader (build/tests/report_dump). The program
# makes a known set of calls; the report must count exactly those:
#   hier, 2 nodes x 2 ranks, 5 allreduce of 100000 floats (taken), 5 of 10
#     floats (passed: ISLE_COMM_MIN_BYTES) and 3 the shim never takes (int,
#     MAX, derived type): per tier the bytes the hierarchy sends (island
#     4 x 400000 B per call, job 4 x 200000 B) against a ring in rank order
#     (1.5 x 400000 B per rank, 2 ranks per tier);
#   flat ring: the shim's bytes per tier equal the ring's, to the byte;
#   auto with int8 on the network level: the crossover probe's traffic and
#     time are reported (ISLE_COMM_PROBE_SHARE=0), calls add up per size
#     class; at the default bound the 8 calls do not earn the probe (0 B);
#   what ran per size class: hier's taken class "shim", its passed one
#     "library"; under auto with the probe run (ISLE_COMM_VERBOSE=2 logs
#     its picks), one size per class at a probe size: the library
#     algorithm picked there, as "ompi:NAME" / "mpich:NAME" ("library" for
#     the default); where the shim won there, the pick of the probe size
#     below if a library algorithm won that, else the shim or the default;
#   one report line, from rank 0 only.
set -u
# shellcheck source=comm_shim/testlib.sh
source "$(dirname "$0")/../../comm_shim/testlib.sh"
isle_comm_local_setup report
DUMP=$B/tests/report_dump
CHECK_MPICH=$PWD/$B/tests/comm_mpi_check_mpich
[ -x "$DUMP" ] || { echo "skip: $DUMP not built"; exit 77; }
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

cat >"$T/p4.json" <<'PLAN'
{"isle_plan": 1, "job_id": "t67", "ranks": [
{"rank": 0, "node": "n00", "gpu": 0, "island": "nvl0", "leaf": "l0"},
{"rank": 1, "node": "n00", "gpu": 1, "island": "nvl0", "leaf": "l0"},
{"rank": 2, "node": "n01", "gpu": 0, "island": "nvl1", "leaf": "l0"},
{"rank": 3, "node": "n01", "gpu": 1, "island": "nvl1", "leaf": "l0"}],
"levels": [
{"name": "nvlink", "bw_gbps": 100, "lat_us": 1, "codec": "none"},
{"name": "net", "bw_gbps": 1, "lat_us": 20, "codec": "none"}]}
PLAN

# mpi KIND [VAR=VALUE...] -- ARGS: 4 ranks, the shim preloaded, the report
# to $T/r.json; output in $T/out, the dump in $T/dump.
mpi() {
	local kind=$1 env=(ISLE_PLAN="$T/p4.json" ISLE_REPORT=1 ISLE_REPORT_FILE="$T/r.json" ISLE_COMM_TIMEOUT_S=60) e args=()
	shift
	while [ "$1" != -- ]; do env+=("$1"); shift; done
	shift
	rm -f "$T/r.json" "$T/dump"
	if [ "$kind" = ompi ]; then
		args=(-x LD_PRELOAD="$SHIM")
		for e in "${env[@]}"; do args+=(-x "$e"); done
		timeout 170 mpirun -np 4 "${args[@]}" "$CHECK" "$@" >"$T/out" 2>&1
	else
		args=(-env LD_PRELOAD "$SHIM")
		for e in "${env[@]}"; do args+=(-env "${e%%=*}" "${e#*=}"); done
		timeout 170 mpiexec.mpich -np 4 "${args[@]}" "$CHECK_MPICH" "$@" >"$T/out" 2>&1
	fi || return 1
	grep -q '^exact: PASS' "$T/out" && "$DUMP" "$T/r.json" >"$T/dump"
}
# field LINE-PREFIX N: the Nth word of the dump line that starts so.
field() { awk -v p="$1" -v n="$2" 'index($0, p) == 1 { print $n }' "$T/dump"; }
show() { sed 's/^/     /' "$T/dump" 2>/dev/null; grep -E 'FAIL|rror|isle' "$T/out" | head -5 | sed 's/^/     /'; }

kinds=(ompi)
[ -x "$CHECK_MPICH" ] && command -v mpiexec.mpich >/dev/null && kinds+=(mpich)
for k in "${kinds[@]}"; do
	# --- hier: counts and bytes per tier, exactly
	if mpi "$k" ISLE_COMM_ALGO=hier ISLE_COMM_MIN_BYTES=1K -- \
		exact --sizes 10,100000 --dtype float --iters 5; then
		got="$(field 'class 0 ' 4)/$(field 'class 0 ' 6) $(field 'class 65536 ' 4)/$(field 'class 65536 ' 6)"
		got+=" $(field 'tier island' 4)/$(field 'tier island' 6) $(field 'tier job' 4)/$(field 'tier job' 6)"
		got+=" $(field 'tier island' 8) $(field 'tier node' 4) $(field 'probe' 2)"
		got+=" $(field 'class 0 ' 8) $(field 'class 65536 ' 8) $(field 'class 256 ' 8)"
		want="0/8 5/0 8000000/6000000 4000000/6000000 none 0 0 library shim -"
		lines=$(grep -c '^isle_report: mpi, 4 ranks: 5 allreduce taken, 8 passed through' "$T/out")
		if [ "$got" = "$want" ] && [ "$lines" = 1 ] && [ "$(grep -c '^isle_report' "$T/out")" = 1 ]; then
			ok "$k hier: $(grep '^isle_report' "$T/out")"
		else
			bad "$k hier: got '$got', want '$want'; $lines report lines"
			show
		fi
	else
		bad "$k hier: run failed"
		show
	fi
	# --- flat ring: the shim's ring is the library's ring, byte for byte
	if mpi "$k" ISLE_COMM_ALGO=ring -- exact --sizes 100000,777 --dtype float --iters 3; then
		si=$(field 'tier island' 4) li=$(field 'tier island' 6)
		sj=$(field 'tier job' 4) lj=$(field 'tier job' 6)
		# 100000 floats: each rank 2 x 3/4 x 400000 B; 777: shards of
		# 195,194,194,194 floats; 3 calls of each.
		want=$(( (3 * 4 * 600000 + 3 * 4 * 2 * 777 * 4 - 3 * 2 * (195 + 194 + 194 + 194) * 4) / 2 ))
		if [ "$si" = "$li" ] && [ "$sj" = "$lj" ] && [ "$si" = "$want" ] && [ "$sj" = "$want" ] &&
			[ "$(field 'class 65536 ' 4)" = 3 ] && [ "$(field 'class 256 ' 4)" = 3 ]; then
			ok "$k ring: island and job $si B each, as the rank-order ring"
		else
			bad "$k ring: island $si/$li, job $sj/$lj, want $want each"
			show
		fi
	else
		bad "$k ring: run failed"
		show
	fi
	# --- auto, int8 across nodes: the probe (unbounded) is reported;
	# calls add up
	if mpi "$k" ISLE_COMM_CODEC=int8 ISLE_COMM_PROBE_SHARE=0 -- exact --sizes 1024,100000 --dtype float \
		--iters 4 --values real --tol 0.02 --tol-mode max; then
		c4=$(( $(field 'class 4096 ' 4) + $(field 'class 4096 ' 6) ))
		c64=$(( $(field 'class 65536 ' 4) + $(field 'class 65536 ' 6) ))
		pb=$(field probe 2) ps=$(field probe 3) tj=$(field 'class 65536 ' 4)
		codec_ok=1
		[ "$tj" -gt 0 ] && ! grep -q '^tier job .* codecs .*int8' "$T/dump" && codec_ok=0
		if [ "$c4" = 4 ] && [ "$c64" = 4 ] && [ "$pb" -gt 0 ] &&
			awk -v s="$ps" 'BEGIN { exit !(s > 0) }' && [ $codec_ok = 1 ]; then
			ok "$k auto int8: 4+4 calls, probe $pb B in $ps s; $(grep '^tier job' "$T/dump")"
		else
			bad "$k auto int8: calls $c4/$c64, probe '$pb' B '$ps' s, codec ok $codec_ok"
			show
		fi
	else
		bad "$k auto int8: run failed"
		show
	fi
	# --- auto, probe run: per size class the path the probe picked
	if mpi "$k" ISLE_COMM_PROBE_SHARE=0 ISLE_COMM_VERBOSE=2 -- exact --sizes 2,512,8192,131072 \
		--dtype float --iters 3; then
		unset P
		declare -A P=()
		for t in $(grep -m1 '^isle_comm: rank [0-9]* of 4, probed' "$T/out" | sed 's/.*probed//'); do
			[[ $t == *:* ]] && P[${t%%:*}]=${t#*:}
		done
		# want SIZE BELOW: the path a call of a probe size runs
		want() {
			local n=${P[$1]:-} b=isle
			[ -n "$2" ] && b=${P[$2]:-isle}
			[ "$n" = isle ] && [ "$b" != isle ] && n=$b
			case $n in
			'') echo missing ;;
			isle) echo 'shim|library' ;;
			default | auto) echo library ;;
			*) echo "$k:$n" ;;
			esac
		}
		# class 0 also holds the 3 calls the shim never takes: library
		w0=$(want 8 '')
		case $w0 in
		library) w0=library ;;
		'shim|library') w0='shim,library|library' ;;
		shim) w0=shim,library ;;
		*) w0=library,$w0 ;;
		esac
		got="$(field 'class 0 ' 8) $(field 'class 256 ' 8) $(field 'class 4096 ' 8) $(field 'class 65536 ' 8)"
		if [ ${#P[@]} -ge 10 ] && [[ $got =~ ^($w0)\ ($(want 2K 512))\ ($(want 32K 8K))\ ($(want 512K 128K))$ ]]; then
			ok "$k auto: ran per class '$got'; probe picked 8:${P[8]} 2K:${P[2K]} 32K:${P[32K]} 512K:${P[512K]}"
		else
			bad "$k auto: ran per class '$got', want '$w0 $(want 2K 512) $(want 32K 8K) $(want 512K 128K)' (picks: ${#P[@]})"
			show
		fi
	else
		bad "$k auto, probe run: run failed"
		show
	fi
	# --- the same at the default bound (1%): 8 calls do not earn the probe
	if mpi "$k" ISLE_COMM_CODEC=int8 -- exact --sizes 1024,100000 --dtype float \
		--iters 4 --values real --tol 0.02 --tol-mode max; then
		c64=$(( $(field 'class 65536 ' 4) + $(field 'class 65536 ' 6) ))
		pb=$(field probe 2)
		if [ "$c64" = 4 ] && [ "$pb" = 0 ]; then
			ok "$k auto int8, probe bounded to 1%: 4+4 calls, probe 0 B"
		else
			bad "$k auto int8, probe bounded: calls $c64, probe '$pb' B (want 0)"
			show
		fi
	else
		bad "$k auto int8 bounded: run failed"
		show
	fi
done
# --- no report unless asked: no line, no file
rm -f "$T/r.json"
timeout 170 mpirun -np 2 -x LD_PRELOAD="$SHIM" "$CHECK" exact --sizes 100 --dtype float >"$T/out" 2>&1
if grep -q '^exact: PASS' "$T/out" && ! grep -q '^isle_report' "$T/out" && [ ! -e "$T/r.json" ]; then
	ok "without ISLE_REPORT / ISLE_REPORT_FILE: no report"
else
	bad "report without being asked"
	show
fi

if [ $fails -ne 0 ]; then
	echo "67-comm-report: $fails failed"
	exit 1
fi
echo "67-comm-report: all passed"
