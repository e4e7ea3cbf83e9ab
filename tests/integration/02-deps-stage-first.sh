#!/bin/bash
# 02-deps-stage-first: the dependency stage runs before make computes any
# flags from installed packages.
#
# The fresh-machine defect: the Makefile decided HAVE_MPI and the MPI flags
# (`mpicc -showme`) when it was parsed, before scripts/deps.sh had installed
# Open MPI, so the first `make test` on a new machine stopped with
# "bench_comm.c: fatal error: mpi.h: No such file or directory" and only the
# second run passed.
#
# Here, in a copy of the working tree, make runs with a PATH that has no
# mpicc (as on a machine without Open MPI) and DEPS_SCRIPT pointing at a fake
# deps script that "installs" Open MPI by putting mpicc back on that PATH.
# One make run must then build the MPI objects (bench_comm, libisle_mpi_ompi.so),
# which only works if the dependency stage came first. Also: `make clean`
# does not run the installer. Needs mpicc on this machine; no root.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
real_mpicc=$(command -v mpicc || true)
if [ -z "$real_mpicc" ]; then
	echo "SKIP: no mpicc on this machine (install libopenmpi-dev openmpi-bin, or run scripts/deps.sh)"
	exit 77
fi
command -v git >/dev/null || { echo "SKIP: git not found"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-02-deps.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The working tree as it is (tracked and new files, not build outputs).
mkdir -p "$work/src"
(cd "$repo" && git ls-files -z -c -o --exclude-standard |
	tar --null -T - -cf -) | tar -C "$work/src" -xf -

# A PATH without any MPI compiler wrapper: every program on the current PATH
# by symlink, except mpicc & co. and opal_wrapper (what they point to).
mkdir -p "$work/bin"
IFS=: read -r -a dirs <<<"$PATH"
for d in "${dirs[@]}"; do
	[ -d "$d" ] || continue
	for f in "$d"/*; do
		n=${f##*/}
		case $n in mpicc* | mpiCC* | mpic++* | mpicxx* | mpif* | opal_wrapper* | ortecc*) continue ;; esac
		[ -x "$f" ] && [ ! -e "$work/bin/$n" ] && ln -s "$f" "$work/bin/$n"
	done
done
if PATH=$work/bin command -v mpicc >/dev/null; then
	echo "FAIL: could not build a PATH without mpicc"
	exit 1
fi

# The fake deps script: logs each call; installing puts mpicc back.
log=$work/deps.log
cat >"$work/fake-deps.sh" <<EOF
#!/bin/bash
set -euo pipefail
echo "deps \${1:-all}" >>'$log'
case \${1:-all} in
--print) exec '$work/src/scripts/deps.sh' --print ;;
--check) [ -e '$work/bin/mpicc' ] ;;
all | --packages-only) ln -sf '$real_mpicc' '$work/bin/mpicc' ;;
*) echo "fake-deps: unexpected argument \$1" >&2; exit 2 ;;
esac
EOF
chmod +x "$work/fake-deps.sh"

# No make state from an enclosing `make test` (jobserver, command-line
# variables, the SLURM_SRC/SLURM_PREFIX it exports). ISLE_DEPS_DONE=1, which
# make puts in the environment of its recipes, stays: the Makefile must
# ignore it there.
run_make() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u SLURM_SRC -u SLURM_PREFIX \
		-u ISLE_SLURM_PREFIX -u SLURM_PLUGIN_DIR -u DEPS_OK -u ISLE_DEPS \
		-u INTEG_TESTS -u UNIT_TESTS \
		PATH="$work/bin" make -C "$work/src" --no-print-directory \
		DEPS_SCRIPT="$work/fake-deps.sh" "$@"
}

fail=0
echo "== make clean (must not install anything)"
run_make clean >"$work/clean.out" 2>&1 || { cat "$work/clean.out"; echo "FAIL: make clean"; fail=1; }
if grep -qE '^deps (all|--packages-only)$' "$log" 2>/dev/null; then
	echo "FAIL: make clean ran the dependency installer"
	fail=1
fi
: >"$log"

echo "== one make run of the MPI targets, mpicc absent until deps runs"
targets="build/bench/bench_comm build/lib/libisle_mpi_ompi.so"
if ! run_make -j2 $targets >"$work/make.out" 2>&1; then
	tail -20 "$work/make.out"
	echo "FAIL: the first make run failed (flags computed before the dependency stage?)"
	fail=1
fi
echo "deps script calls: $(tr '\n' ' ' <"$log")"
grep -qE '^deps all$' "$log" || { echo "FAIL: the dependency installer did not run"; fail=1; }
for t in $targets; do
	[ -e "$work/src/$t" ] || { echo "FAIL: $t not built"; fail=1; }
done
# The compile lines of the MPI objects came after the installer and carry
# the MPI flags it made available.
grep -q -- '-DHAVE_MPI.*comm_shim/bench_comm.c' "$work/make.out" ||
	{ echo "FAIL: bench_comm.c compiled without -DHAVE_MPI"; fail=1; }

[ $fail = 0 ] && echo "02-deps-stage-first: PASS"
exit $fail
