#!/bin/bash
# isle dependency installer: Debian packages, then Slurm 24.11.5 built from
# Debian 13's source package into a cache prefix outside the repository.
#
# Usage: scripts/deps.sh [--check] [--packages-only] [--slurm-only]
#   --check          exit 0 if everything is present, 1 otherwise (no changes)
#
# Environment:
#   ISLE_CACHE   cache root (default /opt/isle)
#   ISLE_JOBS    parallel make jobs for Slurm (default: nproc)
#
# A second run finds the stamp files and returns in seconds.
set -euo pipefail

ISLE_CACHE=${ISLE_CACHE:-/opt/isle}
SLURM_VER=24.11.5
SLURM_DEB_VER=24.11.5-4+deb13u1
SLURM_SHA256=e1a5547edd212c38b5e3230a284133f777b32746551f094aaa81cc4af375e332
SLURM_PREFIX=$ISLE_CACHE/slurm-$SLURM_VER
SLURM_SRC=$ISLE_CACHE/src/slurm-$SLURM_VER
SLURM_STAMP=$SLURM_PREFIX/.isle-built
PKG_STAMP=$ISLE_CACHE/.isle-packages
JOBS=${ISLE_JOBS:-$(nproc)}

PACKAGES=(
	# build tools
	build-essential pkg-config dpkg-dev ca-certificates xz-utils bzip2 file
	# isle's own dependencies
	libhwloc-dev hwloc libjson-c-dev libcmocka-dev libibverbs-dev ibverbs-providers
	infiniband-diags libibnetdisc-dev libibumad-dev ibsim-utils libumad2sim0
	libopenmpi-dev openmpi-bin libpmix-dev libmpich-dev mpich graphviz gnuplot-nox iproute2
	procps psmisc util-linux libxml2-utils jq
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
trap 'rc=$?; [ $rc -ne 0 ] && [ -n "$step" ] && echo "deps.sh: step \"$step\" failed (exit $rc). Fix the cause above and re-run scripts/deps.sh; completed steps are cached." >&2; exit $rc' EXIT

pkgs_missing() {
	local missing=()
	for p in "${PACKAGES[@]}"; do
		[[ $p == \#* ]] && continue
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
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

fetch_slurm() {
	local tarball=$ISLE_CACHE/src/slurm-wlm_$SLURM_VER.orig.tar.gz
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

build_slurm() {
	# One Slurm build at a time: a second deps.sh (e.g. started by another
	# engineer's `make`) waits here instead of deleting the tree that the
	# first one is compiling, then finds the stamp below.
	mkdir -p "$ISLE_CACHE"
	exec 9>"$ISLE_CACHE/.slurm-build.lock"
	if ! flock -n 9; then
		echo "deps.sh: another deps.sh is building Slurm; waiting for it" >&2
		flock 9
	fi
	if slurm_ok; then
		echo "deps.sh: Slurm $SLURM_VER cached in $SLURM_PREFIX"
		return 0
	fi
	fetch_slurm
	local tarball=$ISLE_CACHE/src/slurm-wlm_$SLURM_VER.orig.tar.gz
	step="unpack Slurm"
	rm -rf "$SLURM_SRC"
	mkdir -p "$SLURM_SRC"
	# The upstream tarball's top folder is named after the git tag; strip it.
	tar -C "$SLURM_SRC" --strip-components=1 -xzf "$tarball" || fail "cannot unpack $tarball"
	[ -x "$SLURM_SRC/configure" ] || fail "unpacked tree $SLURM_SRC has no configure script"
	local pmix=/usr/lib/x86_64-linux-gnu/pmix2
	[ -d "$pmix" ] || pmix=$(dirname "$(dirname "$(find /usr/lib -name libpmix.so -path '*pmix*' | head -1)")")
	step="configure Slurm"
	(cd "$SLURM_SRC" && ./configure -q --prefix="$SLURM_PREFIX" --sysconfdir="$SLURM_PREFIX/etc" \
		--enable-multiple-slurmd --with-pmix="$pmix" --disable-debug --without-rpath \
		--disable-slurmrestd --without-hdf5 --without-rdkafka --without-nvml --without-rsmi \
		--without-oneapi --disable-x11 >"$ISLE_CACHE/src/configure.log" 2>&1) ||
		fail "configure failed; see $ISLE_CACHE/src/configure.log (tail: $(tail -3 "$ISLE_CACHE/src/configure.log"))"
	step="make Slurm (about 10-15 min on 2 cores)"
	(cd "$SLURM_SRC" && make -j"$JOBS" >"$ISLE_CACHE/src/make.log" 2>&1) ||
		fail "make failed; see $ISLE_CACHE/src/make.log"
	step="make install Slurm"
	(cd "$SLURM_SRC" && make -j"$JOBS" install >"$ISLE_CACHE/src/install.log" 2>&1) ||
		fail "make install failed; see $ISLE_CACHE/src/install.log"
	step="check Slurm plugins"
	# (cred/slurm has no plugin file of its own: auth_slurm.so provides it.)
	for p in mpi_pmix auth_slurm select_cons_tres topology_tree topology_block gres_gpu; do
		[ -f "$SLURM_PREFIX/lib/slurm/$p.so" ] || fail "plugin $p.so missing from $SLURM_PREFIX/lib/slurm"
	done
	date -u +%FT%TZ >"$SLURM_STAMP"
	step=""
	echo "deps.sh: Slurm $SLURM_VER installed in $SLURM_PREFIX"
}

mode=${1:-all}
case $mode in
--check) trap - EXIT; do_check; exit $? ;;
--packages-only) install_packages ;;
--slurm-only) build_slurm ;;
all) install_packages; build_slurm ;;
*) echo "usage: $0 [--check|--packages-only|--slurm-only]" >&2; exit 2 ;;
esac
step=""
