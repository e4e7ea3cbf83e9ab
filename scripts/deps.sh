#!/bin/bash
# isle dependency installer: Debian packages, then one Slurm release built
# into a cache prefix outside the repository.
#
# Usage: scripts/deps.sh [--check] [--packages-only] [--slurm-only] [--print]
#   --check          exit 0 if everything is present, 1 otherwise (no changes);
#                    --check --packages-only: the Debian packages only
#   --packages-only  Debian packages only (site mode: the site brings Slurm)
#   --slurm-only     the Slurm build only
#   --print          the resolved Slurm paths as make-includable lines
#                    (SLURM_VER, SLURM_PREFIX, SLURM_SRC, SLURM_PLUGIN_DIR);
#                    the Makefile includes them, so this is the one mapping
#                    from a release name to its paths
#
# Environment:
#   SLURM          the Slurm release: 24.11 (default), 25.11 or 26.05
#                    24.11: 24.11.5 from Debian 13's source package (sha256 pinned)
#                    25.11: 25.11.7 and
#                    26.05: 26.05.3 from SLURM_TARBALL (sha256 checked against
#                           a SHA256SUMS file beside it when there is one)
#   SLURM_TARBALL  25.11 and 26.05 only; default
#                  <repo>/../shared/slurm/slurm-<ver>.tar.xz
#   ISLE_CACHE     cache root (default /opt/isle)
#   ISLE_JOBS      parallel make jobs for Slurm (default: nproc)
#
# Every release has its own prefix, source tree and stamp:
#   $ISLE_CACHE/slurm-<ver>, $ISLE_CACHE/src/slurm-<ver>, $ISLE_CACHE/slurm-<ver>/.isle-built
# A second run finds the stamp files and returns in seconds.
set -euo pipefail

ISLE_CACHE=${ISLE_CACHE:-/opt/isle}
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SLURM=${SLURM:-24.11}
case $SLURM in
24.11 | 24.11.5)
	SLURM_VER=24.11.5
	SLURM_DEB_VER=24.11.5-4+deb13u1
	SLURM_SHA256=e1a5547edd212c38b5e3230a284133f777b32746551f094aaa81cc4af375e332
	SLURM_TARBALL=$ISLE_CACHE/src/slurm-wlm_$SLURM_VER.orig.tar.gz
	;;
25.11 | 25.11.7 | 26.05 | 26.05.3)
	case $SLURM in 25.11*) SLURM_VER=25.11.7 ;; *) SLURM_VER=26.05.3 ;; esac
	SLURM_DEB_VER= # not from Debian: no Debian suite carries these releases
	SLURM_SHA256=  # from SHA256SUMS beside the tarball, when present
	SLURM_TARBALL=$(realpath -m "${SLURM_TARBALL:-$REPO_ROOT/../shared/slurm/slurm-$SLURM_VER.tar.xz}")
	;;
*)
	echo "deps.sh: unknown Slurm release SLURM=$SLURM (known: 24.11, 25.11, 26.05)" >&2
	exit 2
	;;
esac
SLURM_PREFIX=$ISLE_CACHE/slurm-$SLURM_VER
SLURM_SRC=$ISLE_CACHE/src/slurm-$SLURM_VER
SLURM_STAMP=$SLURM_PREFIX/.isle-built
# Per-release logs, so a build of one release never overwrites another's.
SLURM_LOG=$ISLE_CACHE/src/slurm-$SLURM_VER
JOBS=${ISLE_JOBS:-$(nproc)}

PACKAGES=(
	# build tools
	build-essential pkg-config dpkg-dev ca-certificates xz-utils bzip2 file
	# isle's own dependencies
	libhwloc-dev hwloc libjson-c-dev libcmocka-dev libibverbs-dev ibverbs-providers
	infiniband-diags libibnetdisc-dev libibumad-dev ibsim-utils libumad2sim0
	libopenmpi-dev openmpi-bin libpmix-dev libmpich-dev mpich graphviz gnuplot-nox iproute2
	procps psmisc util-linux libxml2-utils jq
	# Fashion-MNIST (gzip idx files) for the shim's convergence check
	dataset-fashion-mnist
	# make fuzz: clang with libFuzzer and the sanitizer runtimes
	clang libclang-rt-14-dev
	# tests/integration/62-valgrind-tools.sh: leak checks of the CLI tools
	valgrind
	# make rpm (rpmbuild; make deb needs dpkg-dev's tools only)
	rpm
	# isle-exporter's HTTP server; Prometheus and promtool for its tests
	libmicrohttpd-dev prometheus curl
	# Slurm build dependencies
	libmunge-dev munge libyaml-dev libjwt-dev libhttp-parser-dev liblz4-dev
	libpam0g-dev libdbus-1-dev libnuma-dev libreadline-dev zlib1g-dev
)

step=""
fail() {
	echo "deps.sh: FAILED at step: $step" >&2
	echo "deps.sh: $*" >&2
	exit 1
}
# shellcheck disable=SC2154 # rc is assigned inside the trap string
trap 'rc=$?; [ $rc -ne 0 ] && [ -n "$step" ] && echo "deps.sh: step \"$step\" failed (exit $rc). Fix the cause above and re-run scripts/deps.sh; completed steps are cached." >&2; exit $rc' EXIT

pkgs_missing() {
	# One dpkg-query for all of them: make runs --check on every invocation.
	local want=() installed
	for p in "${PACKAGES[@]}"; do
		[[ $p == \#* ]] || want+=("$p")
	done
	installed=" $(dpkg-query -W -f='${Package} ${Status}\n' "${want[@]}" 2>/dev/null |
		awk '$NF == "installed" && $(NF-1) == "ok" { sub(/:.*/, "", $1); print $1 }' | tr '\n' ' ' || true) "
	local missing=()
	for p in "${want[@]}"; do
		[[ $installed == *" $p "* ]] || missing+=("$p")
	done
	echo "${missing[@]:-}"
}

slurm_ok() {
	[ -f "$SLURM_STAMP" ] && [ -x "$SLURM_PREFIX/sbin/slurmctld" ] && [ -f "$SLURM_SRC/config.h" ]
}

do_check() {
	local m
	m=$(pkgs_missing)
	[ -z "$m" ] || { echo "missing packages: $m"; return 1; }
	[ "${1:-}" = --packages-only ] && return 0
	slurm_ok || { echo "Slurm $SLURM_VER not built in $SLURM_PREFIX"; return 1; }
	return 0
}

install_packages() {
	local m
	m=$(pkgs_missing)
	if [ -z "$m" ]; then
		echo "deps.sh: Debian packages present"
		return 0
	fi
	[ "$(id -u)" = 0 ] || fail "need root to install: $m (run: sudo scripts/deps.sh)"
	step="apt-get update"
	echo "deps.sh: installing: $m"
	DEBIAN_FRONTEND=noninteractive apt-get update -q ||
		fail "apt-get update failed; check network access to the Debian mirror"
	step="apt-get install"
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $m ||
		fail "apt-get install failed for: $m"
	step=""
}

# 24.11: the upstream tarball from Debian 13's source package, sha256 pinned.
fetch_slurm_debian() {
	local tarball=$SLURM_TARBALL
	mkdir -p "$ISLE_CACHE/src"
	if [ -f "$tarball" ] && echo "$SLURM_SHA256  $tarball" | sha256sum -c --status; then
		echo "deps.sh: Slurm tarball cached"
	else
		step="derive trixie deb-src list"
		local st=$ISLE_CACHE/apt
		rm -rf "$st"
		mkdir -p "$st/lists/partial" "$st/sources.list.d" "$st/cache/archives/partial"
		local src=/etc/apt/sources.list.d/debian.sources
		[ -f "$src" ] || fail "$src not found: cannot derive a deb-src list (a Debian 12 deb822 sources file is expected)"
		# Keep only the main archive stanza (not -security), switch to deb-src and trixie.
		awk 'BEGIN{RS=""; ORS="\n\n"} !/debian-security/' "$src" |
			sed -e 's/^Types:.*/Types: deb-src/' -e 's/^Suites:.*/Suites: trixie/' \
			>"$st/sources.list.d/trixie-src.sources"
		grep -q '^URIs:' "$st/sources.list.d/trixie-src.sources" || fail "no URIs in derived list"
		local opts=(-o "Dir::State=$st" -o "Dir::State::Lists=$st/lists"
			-o "Dir::State::status=/var/lib/dpkg/status"
			-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$st/sources.list.d"
			-o "Dir::Cache=$st/cache" -o "APT::Get::List-Cleanup=0")
		step="apt-get update (private trixie deb-src state)"
		apt-get "${opts[@]}" update -q || fail "could not read the trixie source index"
		step="apt-get source slurm-wlm=$SLURM_DEB_VER"
		(cd "$ISLE_CACHE/src" && apt-get "${opts[@]}" source --download-only --tar-only "slurm-wlm=$SLURM_DEB_VER") ||
			fail "download of slurm-wlm $SLURM_DEB_VER source failed"
		step="verify sha256"
		echo "$SLURM_SHA256  $tarball" | sha256sum -c --status ||
			{ rm -f "$tarball"; fail "sha256 mismatch for $tarball (removed); re-run to download again"; }
	fi
	step=""
}

# 25.11, 26.05: a release tarball the site provides (SLURM_TARBALL), checked against
# the SHA256SUMS beside it when there is one. Not copied: it is read in place.
fetch_slurm_tarball() {
	local tarball=$SLURM_TARBALL
	step="find the Slurm $SLURM_VER tarball"
	[ -f "$tarball" ] || fail "no Slurm $SLURM_VER tarball at $tarball (set SLURM_TARBALL=/path/to/slurm-$SLURM_VER.tar.xz)"
	local sums name want
	sums=$(dirname "$tarball")/SHA256SUMS
	name=$(basename "$tarball")
	if [ -f "$sums" ]; then
		step="verify sha256 against $sums"
		want=$(awk -v n="$name" '{f=$2; sub(/^\*/, "", f)} f == n {print $1; exit}' "$sums")
		[ -n "$want" ] || fail "$sums has no line for $name"
		echo "$want  $tarball" | sha256sum -c --status ||
			fail "sha256 mismatch for $tarball (expected $want from $sums)"
		echo "deps.sh: $name sha256 OK ($sums)"
	else
		echo "deps.sh: warning: no SHA256SUMS beside $tarball; its checksum is not checked" >&2
	fi
	step=""
}

build_slurm() {
	# Fast path: built already (no lock needed to read a stamp).
	if slurm_ok; then
		echo "deps.sh: Slurm $SLURM_VER cached in $SLURM_PREFIX"
		return 0
	fi
	# One Slurm build at a time, whatever the release (2 cores): a second
	# deps.sh (e.g. another user's `make` on the same host) waits here instead
	# of deleting the tree that the first one is compiling, then finds the
	# stamp below.
	mkdir -p "$ISLE_CACHE/src"
	exec 9>"$ISLE_CACHE/.slurm-build.lock"
	if ! flock -n 9; then
		echo "deps.sh: another deps.sh is building Slurm; waiting for it" >&2
		flock 9
	fi
	if slurm_ok; then
		echo "deps.sh: Slurm $SLURM_VER cached in $SLURM_PREFIX"
		return 0
	fi
	if [ -n "$SLURM_DEB_VER" ]; then fetch_slurm_debian; else fetch_slurm_tarball; fi
	local t0=$SECONDS
	step="unpack Slurm"
	rm -rf "$SLURM_SRC"
	mkdir -p "$SLURM_SRC"
	# The tarball's top folder is named after the git tag or release; strip it.
	# (tar recognises gzip and xz by itself.)
	tar -C "$SLURM_SRC" --strip-components=1 -xf "$SLURM_TARBALL" || fail "cannot unpack $SLURM_TARBALL"
	[ -x "$SLURM_SRC/configure" ] || fail "unpacked tree $SLURM_SRC has no configure script"
	local pmix=/usr/lib/x86_64-linux-gnu/pmix2
	[ -d "$pmix" ] || pmix=$(dirname "$(dirname "$(find /usr/lib -name libpmix.so -path '*pmix*' | head -1)")")
	step="configure Slurm $SLURM_VER"
	# The same options for every release. The --disable/--without ones leave
	# out what isle never uses (slurmrestd, HDF5 profiling, Kafka, GPU
	# autodetection libraries, X11) to save build time on small machines.
	(cd "$SLURM_SRC" && ./configure -q --prefix="$SLURM_PREFIX" --sysconfdir="$SLURM_PREFIX/etc" \
		--enable-multiple-slurmd --with-pmix="$pmix" --disable-debug --without-rpath \
		--disable-slurmrestd --without-hdf5 --without-rdkafka --without-nvml --without-rsmi \
		--without-oneapi --disable-x11 >"$SLURM_LOG.configure.log" 2>&1) ||
		fail "configure failed; see $SLURM_LOG.configure.log (tail: $(tail -3 "$SLURM_LOG.configure.log"))"
	step="make Slurm $SLURM_VER (about 10-15 min on 2 cores)"
	(cd "$SLURM_SRC" && make -j"$JOBS" >"$SLURM_LOG.make.log" 2>&1) ||
		fail "make failed; see $SLURM_LOG.make.log"
	step="make install Slurm $SLURM_VER"
	(cd "$SLURM_SRC" && make -j"$JOBS" install >"$SLURM_LOG.install.log" 2>&1) ||
		fail "make install failed; see $SLURM_LOG.install.log"
	step="check Slurm plugins"
	# (cred/slurm has no plugin file of its own: auth_slurm.so provides it.)
	for p in mpi_pmix auth_slurm select_cons_tres topology_tree topology_block gres_gpu; do
		[ -f "$SLURM_PREFIX/lib/slurm/$p.so" ] || fail "plugin $p.so missing from $SLURM_PREFIX/lib/slurm"
	done
	date -u +%FT%TZ >"$SLURM_STAMP"
	step=""
	echo "deps.sh: Slurm $SLURM_VER installed in $SLURM_PREFIX ($((SECONDS - t0)) s to unpack, configure, build and install)"
}

print_vars() {
	# Make syntax; paths here never hold spaces (ISLE_CACHE is ours).
	echo "SLURM_VER := $SLURM_VER"
	echo "SLURM_PREFIX := $SLURM_PREFIX"
	echo "SLURM_SRC := $SLURM_SRC"
	echo "SLURM_PLUGIN_DIR := $SLURM_PREFIX/lib/slurm"
}

mode=${1:-all}
case $mode in
--check) trap - EXIT; do_check "${2:-}"; exit $? ;;
--print) trap - EXIT; print_vars ;;
--packages-only) install_packages ;;
--slurm-only) build_slurm ;;
all) install_packages; build_slurm ;;
*) echo "usage: $0 [--check|--packages-only|--slurm-only|--print]" >&2; exit 2 ;;
esac
step=""
