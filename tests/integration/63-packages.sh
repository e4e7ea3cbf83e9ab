#!/bin/bash
# 63-packages: the .deb and the RPM of the Slurm release under test.
#  1. `make deb` and `make rpm` build isle-slurm-<release> with its plugins
#     in that Slurm's plugin directory. So that nothing lands in the Slurm
#     the other tests on this host use, the plugin directory is the one of
#     a shadow of that Slurm (cp -as: directories real, files symlinks to
#     the real installation).
#  2. Both record the release: the name, the version (deb: +slurmX.Y.Z;
#     RPM: release 1.slurmX.Y.Z), the deb's Slurm-Release field, the RPM's
#     isle-slurm-release provide, and share/isle/slurm-release.
#  3. `rpm -qlp` lists the files of the .deb (less /usr/share/doc).
#  4. The .deb is installed with dpkg; test 55 then runs on the installed
#     layout (/usr, the shadow's plugin dir): a real slurmctld loads the
#     packaged topology/isle and job_submit/isle, slurmd the packaged
#     spank_isle.so, jobs get plans from the packaged isle-agent.
#  5. Next to a Slurm of another release (the first other one built on
#     this host, if any), the packaged spank_isle.so in plugstack.conf:
#     that release's sbatch prints isle's line naming both releases and the
#     package to install, then Slurm's own refusal.
#  6. dpkg -r removes every file.
# Needs root, dpkg-buildpackage, rpmbuild (scripts/deps.sh installs them).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
isle_cluster_require
[ "$(id -u)" = 0 ] || { echo "SKIP: dpkg -i needs root"; exit 77; }
for t in dpkg-buildpackage rpmbuild rpm; do
	command -v "$t" >/dev/null || { echo "SKIP: no $t (scripts/deps.sh installs it)"; exit 77; }
done
command -v mpicc >/dev/null || { echo "SKIP: no MPI: test 55 needs the shim's backends"; exit 77; }

ver=$("$ISLE_SLURM_PREFIX/sbin/slurmctld" -V | awk '{print $2}')
rel=${ver%.*}
pkg=isle-slurm-$rel
work=$(mktemp -d "${ISLE_TMPDIR:-${TMPDIR:-/tmp}}/isle-63.XXXXXX")
installed=
cleanup() {
	[ -z "$installed" ] || dpkg_wait -r "$pkg" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

# dpkg with the lock another apt/dpkg on this host may hold: wait for it.
dpkg_wait() {
	local out i
	for ((i = 0; i < 90; i++)); do
		out=$(dpkg "$@" 2>&1) && { echo "$out"; return 0; }
		echo "$out" | grep -q 'lock' || { echo "$out"; return 1; }
		sleep 10
	done
	echo "$out"
	return 1
}

if dpkg -s "$pkg" >/dev/null 2>&1; then
	fail "$pkg is installed already (dpkg -r $pkg first)"
fi

# --- 1. build ----------------------------------------------------------------
slurm=$work/slurm
cp -as "$ISLE_SLURM_PREFIX" "$slurm"
plugin_dir=$slurm/lib/slurm
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$repo" deb rpm SLURM="$rel" \
	SLURM_PLUGIN_DIR="$plugin_dir" >"$work/make.log" 2>&1 ||
	{ tail -30 "$work/make.log"; fail "make deb rpm"; }
deb=$(sed -n 's/^deb: //p' "$work/make.log")
rpmf=$(sed -n 's/^rpm: //p' "$work/make.log")
[ -f "$deb" ] && [ -f "$rpmf" ] || fail "no package named in make's output: $(tail -3 "$work/make.log")"
echo "ok: built $(basename "$deb") and $(basename "$rpmf")"

# --- 2. the release each records ----------------------------------------------
[ "$(dpkg-deb -f "$deb" Package)" = "$pkg" ] || fail "deb Package: $(dpkg-deb -f "$deb" Package)"
[[ $(dpkg-deb -f "$deb" Version) == *"+slurm$ver" ]] || fail "deb Version: $(dpkg-deb -f "$deb" Version)"
[ "$(dpkg-deb -f "$deb" Slurm-Release)" = "$ver" ] || fail "deb Slurm-Release: $(dpkg-deb -f "$deb" Slurm-Release)"
[ "$(rpm -qp --qf '%{NAME} %{RELEASE}' "$rpmf")" = "$pkg 1.slurm$ver" ] ||
	fail "rpm name/release: $(rpm -qp --qf '%{NAME} %{RELEASE}' "$rpmf")"
rpm -qp --provides "$rpmf" | grep -qx "isle-slurm-release = $ver" || fail "rpm: no isle-slurm-release = $ver"
echo "ok: both record Slurm $ver ($pkg $(dpkg-deb -f "$deb" Version); rpm $(rpm -qp --qf '%{VERSION}-%{RELEASE}' "$rpmf"))"

# --- 3. the same files -----------------------------------------------------------
dpkg-deb -c "$deb" | awk '$1 ~ /^-/ { print substr($6, 2) }' | grep -v '^/usr/share/doc/' |
	sort >"$work/deb.files"
rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$rpmf" | awk '$1 ~ /^-/ { print $2 }' |
	sort >"$work/rpm.files"
diff "$work/deb.files" "$work/rpm.files" >"$work/files.diff" ||
	{ cat "$work/files.diff"; fail "the RPM's files are not the .deb's (< deb, > rpm)"; }
for f in /usr/bin/islectl /usr/bin/isle-agent /usr/lib/isle/libisle_preload.so /usr/share/isle/slurm-release \
	"$plugin_dir/topology_isle.so" "$plugin_dir/job_submit_isle.so" "$plugin_dir/spank_isle.so"; do
	grep -qxF "$f" "$work/deb.files" || fail "$f not in the packages: $(tr '\n' ' ' <"$work/deb.files")"
done
echo "ok: rpm -qlp lists the .deb's $(wc -l <"$work/deb.files") files"

# --- 4. install, and test 55 on what dpkg installed --------------------------------
dpkg_wait -i "$deb" >"$work/dpkg-i.log" || { cat "$work/dpkg-i.log"; fail "dpkg -i $deb"; }
installed=1
dpkg -L "$pkg" | grep -qxF "$plugin_dir/topology_isle.so" || fail "dpkg -L: no $plugin_dir/topology_isle.so"
grep -qx "SLURM_VER=$ver" /usr/share/isle/slurm-release || fail "/usr/share/isle/slurm-release: $(cat /usr/share/isle/slurm-release)"
echo "ok: dpkg -i $pkg; /usr/share/isle/slurm-release says SLURM_VER=$ver"
ISLE_SLURM_PREFIX=$slurm ISLE_INSTALLED_PREFIX=/usr ISLE_INSTALLED_PLUGIN_DIR=$plugin_dir \
	bash "$repo/tests/integration/55-install-examples.sh" >"$work/55.log" 2>&1 ||
	{ cat "$work/55.log"; fail "test 55 on the installed package"; }
sed 's/^/  55: /' "$work/55.log" | grep -E '55: (ok|PASS)'

# --- 5. next to another Slurm release ------------------------------------------
cache=${ISLE_CACHE:-/opt/isle}
other=
for o in 24.11.5 25.11.7 26.05.3; do
	[ "$o" != "$ver" ] && [ -f "$cache/slurm-$o/.isle-built" ] && { other=$o; break; }
done
if [ -n "$other" ]; then
	printf 'ClusterName=isle63\nSlurmctldHost=localhost\nPlugStackConfig=%s\n' \
		"$work/plugstack.conf" >"$work/slurm.conf"
	echo "required $plugin_dir/spank_isle.so" >"$work/plugstack.conf"
	out=$(SLURM_CONF=$work/slurm.conf timeout 60 "$cache/slurm-$other/bin/sbatch" --wrap true 2>&1) &&
		fail "Slurm $other's sbatch accepted the $pkg plugin: $out"
	echo "$out" | grep -q "isle: $plugin_dir/spank_isle.so was built for Slurm $ver (libslurm API [0-9]*) but is loaded by Slurm ${other%.*} (libslurm API [0-9]*); .*install the package built for it (isle-slurm-${other%.*})" ||
		fail "Slurm $other's sbatch: no isle line naming both releases: $out"
	echo "ok: next to Slurm $other: $(echo "$out" | grep -m1 'isle: ')"
else
	echo "note: no other Slurm release built here: the wrong-release line is not checked"
fi

# --- 6. remove ----------------------------------------------------------------------
dpkg_wait -r "$pkg" >"$work/dpkg-r.log" || { cat "$work/dpkg-r.log"; fail "dpkg -r $pkg"; }
installed=
while read -r f; do
	[ ! -e "$f" ] || fail "dpkg -r left $f"
done <"$work/deb.files"
echo "ok: dpkg -r $pkg removed its files"
echo "PASS"
