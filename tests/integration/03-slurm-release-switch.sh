#!/bin/bash
# 03-slurm-release-switch: the Slurm release make builds against.
#  1. `make print-slurm SLURM=X` gives the paths `scripts/deps.sh --print`
#     maps X to (one mapping), for 24.11, 25.11 and 26.05; an unknown release
#     fails.
#  2. Objects compiled against one Slurm tree are not reused for another:
#     in a copy of the working tree, an object of the SPANK plugin is built in
#     site mode against the 24.11 tree, then against the same tree under a
#     second path (as a switch of release changes SLURM_SRC); the second
#     build must compile it again, and a third one (no change) must not.
# Needs the configured 24.11 tree (scripts/deps.sh); no root.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tree=$(SLURM=24.11 "$repo/scripts/deps.sh" --print | sed -n 's/^SLURM_SRC := //p')
prefix=$(SLURM=24.11 "$repo/scripts/deps.sh" --print | sed -n 's/^SLURM_PREFIX := //p')
if [ ! -f "$tree/config.h" ]; then
	echo "SKIP: no configured Slurm tree in $tree (run scripts/deps.sh)"
	exit 77
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-03-switch.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src"
(cd "$repo" && git ls-files -z -c -o --exclude-standard |
	tar --null -T - -cf -) | tar -C "$work/src" -xf -
ln -s "$tree" "$work/slurm-tree-2"

# No make state from an enclosing `make test`.
run_make() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u SLURM_SRC -u SLURM_PREFIX \
		-u ISLE_SLURM_PREFIX -u SLURM_PLUGIN_DIR -u DEPS_OK -u ISLE_DEPS -u SLURM \
		make -C "$work/src" --no-print-directory "$@"
}

fail=0
for rel in 24.11 25.11 26.05; do
	want=$(SLURM=$rel "$repo/scripts/deps.sh" --print | sed 's/ := /=/')
	got=$(run_make print-slurm SLURM=$rel 2>&1) || true
	if [ "$want" != "$got" ]; then
		echo "FAIL: make print-slurm SLURM=$rel:"
		echo "$got"
		echo "deps.sh --print:"
		echo "$want"
		fail=1
	else
		echo "ok: SLURM=$rel -> $(echo "$got" | sed -n 's/^SLURM_PREFIX=//p')"
	fi
done
if run_make print-slurm SLURM=9.99 >"$work/bad.out" 2>&1; then
	echo "FAIL: make print-slurm SLURM=9.99 succeeded"
	fail=1
elif ! grep -q 'unknown Slurm release' "$work/bad.out"; then
	cat "$work/bad.out"
	echo "FAIL: no 'unknown Slurm release' message for SLURM=9.99"
	fail=1
fi

obj=build/slurm_plugin/spank_opts.o
build() { # SLURM_SRC
	run_make ISLE_DEPS=none SLURM_SRC="$1" SLURM_PREFIX="$prefix" "$obj" 2>&1
}
build "$tree" >"$work/b1.out" || { cat "$work/b1.out"; echo "FAIL: first build"; exit 1; }
grep -q "spank_opts.c" "$work/b1.out" || { echo "FAIL: first build did not compile spank_opts.c"; fail=1; }
build "$work/slurm-tree-2" >"$work/b2.out" || { cat "$work/b2.out"; echo "FAIL: second build"; exit 1; }
if grep -q -- "-isystem $work/slurm-tree-2 .*spank_opts.c" "$work/b2.out"; then
	echo "ok: a new Slurm tree recompiles $obj"
else
	cat "$work/b2.out"
	echo "FAIL: $obj was not recompiled against the new Slurm tree"
	fail=1
fi
build "$work/slurm-tree-2" >"$work/b3.out" || { cat "$work/b3.out"; echo "FAIL: third build"; exit 1; }
if grep -q "spank_opts.c" "$work/b3.out"; then
	echo "FAIL: $obj recompiled with no change of tree"
	fail=1
fi

[ $fail = 0 ] && echo "03-slurm-release-switch: PASS"
exit $fail
