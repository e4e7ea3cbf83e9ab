#!/bin/bash
# 60-demo-quick: `scripts/demo.sh --quick` end to end (2 racks x 4 trays).
# It must exit 0 and print what the demo promises:
#  - isle's decision line for the TP=8 PP=2 training job (scontrol show job)
#    and `scontrol show topology`;
#  - the picture's path, and the PNG is there;
#  - the comm comparison: the shim sends fewer bytes on the thin links than
#    the flat baseline, with a small gradient error.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
isle_cluster_require
for f in build/bin/islectl build/bin/isle-agent build/slurm/topology_isle.so \
	build/slurm/spank_isle.so build/lib/libisle_preload.so; do
	[ -e "$repo/$f" ] || { echo "FAIL: $f not built (make)"; exit 1; }
done
command -v mpicc >/dev/null || { echo "SKIP: mpicc missing"; exit 77; }

out=$(mktemp -d "${ISLE_TMPDIR:-${TMPDIR:-/tmp}}/isle-60.XXXXXX")
trap 'rm -rf "$out"' EXIT
log=$out/demo.log

fail() {
	echo "FAIL: $*"
	tail -60 "$log"
	exit 1
}

# The demo keeps its own cluster; ours must not stop it from the trap.
ISLE_DEMO_OUT=$out/demo bash "$repo/scripts/demo.sh" --quick >"$log" 2>&1 ||
	fail "scripts/demo.sh --quick exited $?"
sed 's/\x1b\[[0-9;]*m//g' "$log" >"$log.txt"
grep -E '^== Step|demo finished|isle: tp=8|picture:|thin-link bytes' "$log.txt"

grep -q 'demo finished$' "$log.txt" || fail "the demo skipped steps: $(grep 'demo finished' "$log.txt")"
grep -q 'AdminComment=isle: tp=8 pp=2' "$log.txt" || fail "no isle decision for the training job"
grep -q '^Topology=isle ' "$log.txt" || fail "no scontrol show topology output"
png=$(sed -n 's/^picture: //p' "$log.txt")
[ -n "$png" ] && [ -s "$png" ] || fail "no picture at '$png'"
file "$png" | isle_grep_q 'PNG image' || fail "$png is not a PNG"

# "flat (--isle-shim=off)  T  THIN  INSIDE  ERR" and "isle shim  T  THIN ..."
read -r flat_thin flat_err < <(awk '/^  flat \(--isle-shim=off\)/ { print $(NF-2), $NF }' "$log.txt")
read -r isle_thin isle_err < <(awk '/^  isle shim / { print $(NF-2), $NF }' "$log.txt")
[ -n "${flat_thin:-}" ] && [ -n "${isle_thin:-}" ] || fail "no comm comparison table"
awk -v f="$flat_thin" -v i="$isle_thin" -v e="$isle_err" -v fe="$flat_err" 'BEGIN {
	exit !(i > 0 && i * 2 < f && e < 0.05 && fe < 1e-6) }' ||
	fail "thin-link MiB shim $isle_thin vs flat $flat_thin, errors $isle_err / $flat_err"
echo "ok: thin links $flat_thin MiB flat -> $isle_thin MiB with the shim (gradient error $isle_err)"
echo "PASS"
