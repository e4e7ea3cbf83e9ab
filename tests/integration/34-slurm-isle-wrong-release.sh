#!/bin/bash
# 34-slurm-isle-wrong-release: topology_isle.so built for one Slurm release
# and loaded by the other.
#  A test cluster of the running release (ISLE_SLURM_PREFIX) starts with the
#  right plugins. slurmctld is stopped, topology_isle.so in the cluster's
#  plugin dir is replaced by one built for another release (the first of
#  the others that is built here: 24.11 -> 26.05, 25.11; 25.11 -> 24.11,
#  26.05; 26.05 -> 24.11, 25.11), and slurmctld started again. What the admin sees (24.11 running
#  a 26.05.3 plugin; the other way round reads alike):
#    error: isle: .../topology_isle.so was built for Slurm 26.05.3 (libslurm
#      API 45) but is loaded by Slurm 24.11 (libslurm API 42); Slurm does not
#      load plugins of another release: rebuild isle against the running
#      Slurm (make SLURM=24.11) or install the package built for it
#      (isle-slurm-24.11)
#    plugin_load_from_file: Incompatible Slurm plugin .../topology_isle.so
#      version (26.05.3)
#    error: Couldn't find the specified plugin name for topology/isle ...
#    (the isle line again, plugin_peek's Incompatible line again)
#    error: cannot find topo plugin for topology/isle
#    error: cannot create topo context for topology/isle
#    fatal: Failed to initialize topology plugin
#  isle's line comes from the plugin's constructor at dlopen(), before
#  Slurm's version check: Slurm refuses a topology plugin of another release
#  before its init() runs and slurmctld exits (status 1, no crash). Then the
#  right plugin is put back and slurmctld starts again. Last, spank_isle.so
#  of the other release in plugstack.conf: sbatch prints the isle line
#  (spank_isle.so ... built for Slurm X but is loaded by Slurm Y), then
#  "Incompatible Slurm plugin", "spank: ...: Incompatible plugin version",
#  "Failed to initialize plugin stack", and submits nothing.
#  The other release's plugin: $ISLE_OTHER_PLUGIN (built for
#  $ISLE_OTHER_RELEASE, e.g. 24.11.5) if set, else built here
#  (make B=<tmp> SLURM_SRC=<other tree> SLURM_PREFIX=<other prefix>) from
#  $ISLE_CACHE/src/slurm-<other>; skipped (77) when no other release is
#  built on this host.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$repo/slurm_plugin/testlib.sh"
isle_pt_setup
cache=${ISLE_CACHE:-/opt/isle}
ver=$("$ISLE_SLURM_PREFIX/sbin/slurmctld" -V | awk '{print $2}')
case $ver in
24.11.*) others="26.05.3 25.11.7" ;;
25.11.*) others="24.11.5 26.05.3" ;;
26.05.*) others="24.11.5 25.11.7" ;;
*)
	echo "SKIP: no other release known for Slurm $ver"
	exit 77
	;;
esac
other=${ISLE_OTHER_RELEASE:-${others%% *}} # the release of ISLE_OTHER_PLUGIN
if [ -z "${ISLE_OTHER_PLUGIN:-}" ] && [ -z "${ISLE_OTHER_SLURM_SRC:-}" ]; then
	for o in $others; do
		if [ -f "$cache/src/slurm-$o/config.h" ] && [ -f "$cache/slurm-$o/.isle-built" ]; then
			other=$o
			break
		fi
	done
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-t34.XXXXXX")
trap 'rm -rf "$work"' EXIT
other_so=${ISLE_OTHER_PLUGIN:-}
if [ -z "$other_so" ]; then
	osrc=${ISLE_OTHER_SLURM_SRC:-$cache/src/slurm-$other}
	oprefix=${ISLE_OTHER_SLURM_PREFIX:-$cache/slurm-$other}
	if [ ! -f "$osrc/config.h" ] || [ ! -f "$oprefix/.isle-built" ]; then
		echo "SKIP: no other Slurm release is built here ($others; e.g. $osrc, $oprefix); make SLURM=${other%.*} deps builds it"
		exit 77
	fi
	echo "building topology_isle.so for Slurm $other in $work/other"
	# Site mode (SLURM_SRC/SLURM_PREFIX given): nothing is installed. Not
	# the settings of a `make test` this runs under (MAKEFLAGS).
	mkdir -p "$work/other" && touch "$work/other/.deps-ok"
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$repo" B="$work/other" SLURM_SRC="$osrc" SLURM_PREFIX="$oprefix" \
		ISLE_DEPS=none DEPS_OK="$work/other/.deps-ok" \
		"$work/other/slurm/topology_isle.so" "$work/other/slurm/spank_isle.so" \
		>"$work/build.log" 2>&1 ||
		{ tail -20 "$work/build.log"; fail "cannot build topology_isle.so for Slurm $other"; }
	other_so=$work/other/slurm/topology_isle.so
fi
[ -f "$other_so" ] || fail "no plugin $other_so"
grep -aq "$other" "$other_so" || fail "$other_so does not look built for Slurm $other"

# A new file, never an overwrite: the slurmds keep the old one mapped, and
# rewriting a mapped plugin in place crashes them when they unload it.
swap_in() { # src name
	cp "$1" "$work/plugins/.$2.new" && mv -f "$work/plugins/.$2.new" "$work/plugins/$2"
}

mkdir -p "$work/plugins"
cp "$repo/build/slurm/topology_isle.so" "$repo/build/slurm/spank_isle.so" "$work/plugins/"
isle_pt_gb200 "$work" 4 4 4
echo "required $work/plugins/spank_isle.so" >"$work/plugstack.conf"
isle_cluster_start --nodes 2 --gpus 4 --topology isle \
	--plugin-dir "$work/plugins" --plugstack "$work/plugstack.conf" \
	--etc-file "$work/isle.json" || fail "cluster did not start with the right plugin"
d=$ISLE_CLUSTER_DIR
log=$d/log/slurmctld.log
grep -q "isle: loaded" "$log" || fail "right plugin: cluster file not loaded"

ctld=$(awk '$1 == "slurmctld" { print $3 }' "$d/pids" | tail -1)
kill -TERM "$ctld"
for ((i = 0; i < 120; i++)); do
	kill -0 "$ctld" 2>/dev/null || break
	sleep 0.5
done
kill -0 "$ctld" 2>/dev/null && fail "slurmctld did not stop"
swap_in "$other_so" topology_isle.so
: >"$work/mark"
lines=$(wc -l <"$log")

rc=0
SLURM_CONF=$d/etc/slurm.conf timeout 120 "$ISLE_SLURM_PREFIX/sbin/slurmctld" -D -i \
	-f "$d/etc/slurm.conf" >"$work/ctld.out" 2>&1 || rc=$?
new=$(tail -n +"$((lines + 1))" "$log"; cat "$work/ctld.out")
echo "$new" >"$work/new.log"
echo "slurmctld with the Slurm $other plugin: exit $rc; its log:"
# awk reads all its input: no SIGPIPE for the writer under pipefail.
awk '/isle: |Incompatible|topolog|fatal/ && n++ < 12' <<<"$new"
[ "$rc" -ne 124 ] || fail "slurmctld kept running with a plugin of another release (no refusal)"
[ "$rc" -lt 128 ] || fail "slurmctld died of a signal ($rc) loading a plugin of another release"
echo "$new" | isle_grep_q "isle: .*topology_isle.so was built for Slurm $other (libslurm API [0-9]*) but is loaded by Slurm ${ver%.*} (libslurm API [0-9]*)" ||
	fail "no isle line naming Slurm $other and Slurm ${ver%.*}"
echo "$new" | isle_grep_q "Incompatible Slurm plugin .*topology_isle.so version (${other})" ||
	fail "Slurm's own refusal line is not there"

# The right plugin again: the controller comes back and places jobs.
swap_in "$repo/build/slurm/topology_isle.so" topology_isle.so
isle_ctld_restart || fail "slurmctld did not come back with the right plugin"

# spank_isle.so of the other release in plugstack.conf (required): sbatch
# names both releases, then Slurm refuses the plugin and the submission.
other_spank=$(dirname "$other_so")/spank_isle.so
if [ -f "$other_spank" ]; then
	swap_in "$other_spank" spank_isle.so
	sb_out=$(sbatch --wrap true 2>&1) && fail "sbatch accepted a job with a spank_isle.so of Slurm $other: $sb_out"
	echo "sbatch with the Slurm $other spank_isle.so:"
	echo "$sb_out"
	echo "$sb_out" | isle_grep_q "isle: .*spank_isle.so was built for Slurm $other (libslurm API [0-9]*) but is loaded by Slurm ${ver%.*}" ||
		fail "sbatch: no isle line naming both releases"
	swap_in "$repo/build/slurm/spank_isle.so" spank_isle.so
	j=$(sbatch --parsable -o /dev/null --wrap true) || fail "sbatch with the right spank_isle.so"
	isle_wait_job "$j" 120 >/dev/null || fail "job $j with the right plugins did not complete"
fi
isle_cluster_stop
echo "PASS"
