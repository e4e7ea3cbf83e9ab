# shellcheck shell=bash
# slurm_plugin/testlib.sh: helpers for the topology/isle integration tests
# (tests/integration/30-slurm-isle-*.sh) and `make bench-slurm`.
#
#   isle_pt_gb200 DIR NODES DOMAIN LEAF   GB200-like: 4 GPUs per node, NVLink
#       domains of DOMAIN nodes, leaf switches of LEAF nodes under one spine.
#       Writes DIR/isle.json, DIR/topology-tree.conf, DIR/topology-block.conf
#       and DIR/domains (one "node domain leaf" line per node).
#   isle_pt_pcie DIR NODES [nolinks]      8 GPUs per node, NVLink pairs
#       (0,1) (2,3) (4,5) (6,7), one leaf: DIR/isle.json, and DIR/gres.conf
#       with one line per GPU with Cores= (without it slurmctld keeps no
#       per-GPU topology and picks GPUs by count only) and, unless nolinks,
#       Links= (Slurm's own NVLink-aware pick).
#   isle_pt_leaf FILE NAME NODES GPUS [EXTRA]   a cluster file: nodes
#       n01..NODES in rack r0, GPUS GPUs and one NIC on the one leaf switch
#       each; EXTRA (e.g. '"nvlink_all": 4,') goes into every node.
#   isle_pt_plugstack DIR [ARGS]          DIR/plugstack.conf loading
#       build/slurm/spank_isle.so with ARGS.
#   isle_pt_job_nodes JOBID               the job's nodes, one per line.
#   isle_pt_require_plugins               exit 1 unless both .so are built.
#   isle_pt_setup [LOGLINES]              a test's preamble: isle_cluster_require
#       (tests/cluster/cluster.sh, sourced first) and isle_pt_require_plugins;
#       defines fail MSG (prints "FAIL: MSG" and the last LOGLINES (40) lines
#       of the cluster logs, exits 1) and wait_for SECONDS CMD... (polls CMD
#       every 0.5 s until it succeeds; returns 1 after SECONDS).
#   isle_pt_submit_tool DIR               builds DIR/isle_submit
#       (tests/integration/isle_submit.c: raw job submissions through
#       libslurm) against the Slurm under test.
#   isle_pt_topo [NAME]                   scontrol show topology, only the
#       records named NAME or holding node NAME (24.11: `show topology NAME`;
#       25.11 and 26.05 read a bare NAME as a topology.yaml name: `node=NAME`).

ISLE_PT_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ISLE_PT_PLUGINS=$ISLE_PT_REPO/build/slurm

isle_pt_require_plugins() {
	local f
	for f in topology_isle.so spank_isle.so; do
		if [ ! -f "$ISLE_PT_PLUGINS/$f" ]; then
			echo "FAIL: $ISLE_PT_PLUGINS/$f not built (make)"
			exit 1
		fi
	done
}

# shellcheck disable=SC2120 # LOGLINES is optional
isle_pt_setup() {
	ISLE_PT_FAIL_LOGS=${1:-40}
	isle_cluster_require
	isle_pt_require_plugins

	# shellcheck disable=SC2317 # called by the test that ran isle_pt_setup
	fail() {
		echo "FAIL: $*"
		isle_cluster_logs "$ISLE_PT_FAIL_LOGS"
		exit 1
	}

	# hang guard only
	# shellcheck disable=SC2317
	wait_for() {
		local t=$1 end
		shift
		end=$((SECONDS + t))
		until "$@"; do
			[ "$SECONDS" -lt "$end" ] || return 1
			sleep 0.5
		done
	}
}

isle__pt_name() { printf 'n%02d' "$1"; }

isle_pt_topo() {
	if [ -z "${1:-}" ]; then
		scontrol show topology
		return
	fi
	case $(scontrol --version) in
	"slurm 24.11"*) scontrol show topology "$1" ;;
	*) scontrol show topology node="$1" ;;
	esac
}

isle_pt_gb200() {
	local dir=$1 nodes=$2 dsize=$3 lsize=$4 i d l first last sep
	local ndom=$(((nodes + dsize - 1) / dsize)) nleaf=$(((nodes + lsize - 1) / lsize))
	mkdir -p "$dir"
	: >"$dir/domains"
	{
		printf '{\n  "version": 1,\n  "name": "gb200-test",\n  "nodes": [\n'
		for ((i = 1; i <= nodes; i++)); do
			sep=$([ "$i" -lt "$nodes" ] && echo , || true)
			printf '    {"name": "%s", "gpus": 4, "rack": "rack%d"}%s\n' \
				"$(isle__pt_name "$i")" $(((i - 1) / lsize + 1)) "$sep"
			printf '%s nvl%d leaf%d\n' "$(isle__pt_name "$i")" \
				$(((i - 1) / dsize + 1)) $(((i - 1) / lsize + 1)) >>"$dir/domains"
		done
		printf '  ],\n  "domains": [\n'
		for ((d = 1; d <= ndom; d++)); do
			first=$(((d - 1) * dsize + 1)) last=$((d * dsize))
			((last > nodes)) && last=$nodes
			sep=$([ "$d" -lt "$ndom" ] && echo , || true)
			printf '    {"name": "nvl%d", "nodes": ["n[%02d-%02d]"]}%s\n' "$d" "$first" "$last" "$sep"
		done
		printf '  ],\n  "switches": [\n'
		for ((l = 1; l <= nleaf; l++)); do
			first=$(((l - 1) * lsize + 1)) last=$((l * lsize))
			((last > nodes)) && last=$nodes
			printf '    {"name": "leaf%d", "level": "leaf", "nodes": ["n[%02d-%02d]"]},\n' "$l" "$first" "$last"
		done
		printf '    {"name": "spine1", "level": "spine", "switches": ['
		for ((l = 1; l <= nleaf; l++)); do
			printf '"leaf%d"%s' "$l" "$([ "$l" -lt "$nleaf" ] && echo , || true)"
		done
		printf ']}\n  ]\n}\n'
	} >"$dir/isle.json"
	{
		for ((l = 1; l <= nleaf; l++)); do
			first=$(((l - 1) * lsize + 1)) last=$((l * lsize))
			((last > nodes)) && last=$nodes
			printf 'SwitchName=leaf%d Nodes=n[%02d-%02d]\n' "$l" "$first" "$last"
		done
		printf 'SwitchName=spine1 Switches=leaf[1-%d]\n' "$nleaf"
	} >"$dir/topology-tree.conf"
	{
		for ((d = 1; d <= ndom; d++)); do
			first=$(((d - 1) * dsize + 1)) last=$((d * dsize))
			((last > nodes)) && last=$nodes
			printf 'BlockName=nvl%d Nodes=n[%02d-%02d]\n' "$d" "$first" "$last"
		done
		printf 'BlockSizes=%d\n' "$dsize"
	} >"$dir/topology-block.conf"
}

isle_pt_pcie() {
	local dir=$1 nodes=$2 nolinks=${3:-} i sep
	mkdir -p "$dir"
	{
		printf '{\n  "version": 1,\n  "name": "pcie-pairs",\n  "nodes": [\n'
		for ((i = 1; i <= nodes; i++)); do
			sep=$([ "$i" -lt "$nodes" ] && echo , || true)
			printf '    {"name": "%s", "gpus": 8, "nvlinks": [[0,1,4],[2,3,4],[4,5,4],[6,7,4]]}%s\n' \
				"$(isle__pt_name "$i")" "$sep"
		done
		printf '  ],\n  "switches": [{"name": "leaf1", "level": "leaf", "nodes": ["n[01-%02d]"]}]\n}\n' "$nodes"
	} >"$dir/isle.json"
	local g h links line
	{
		echo "AutoDetect=off"
		for ((g = 0; g < 8; g++)); do
			links=""
			for ((h = 0; h < 8; h++)); do
				if ((h == g)); then links+="-1"
				elif ((h / 2 == g / 2)); then links+="4"
				else links+="0"; fi
				((h < 7)) && links+=","
			done
			line="NodeName=@NODES@ Name=gpu File=@DEVDIR@/nvidia$g Cores=0-15"
			[ -n "$nolinks" ] || line+=" Links=$links"
			echo "$line"
		done
	} >"$dir/gres.conf"
}

isle_pt_plugstack() {
	local dir=$1
	shift
	mkdir -p "$dir"
	echo "required $ISLE_PT_PLUGINS/spank_isle.so $*" >"$dir/plugstack.conf"
}

isle_pt_job_nodes() {
	local nl
	nl=$(scontrol -o show job "$1" | grep -o ' NodeList=[^ ]*' | head -1 | cut -d= -f2)
	[ -n "$nl" ] && [ "$nl" != "(null)" ] && scontrol show hostnames "$nl"
}

# isle_pt_wait_state JOBID STATE TIMEOUT: wait until the job is in STATE.
isle_pt_wait_state() {
	local j=$1 want=$2 t=${3:-60} s
	for ((i = 0; i < t * 4; i++)); do
		s=$(squeue -h -j "$j" -o %T 2>/dev/null)
		[ "$s" = "$want" ] && return 0
		sleep 0.25
	done
	return 1
}

isle_pt_submit_tool() {
	local prefix=${ISLE_SLURM_PREFIX:-/opt/isle/slurm-24.11.5} resp_id=step_id.job_id
	# The job id of a submit response: resp->job_id on 24.11,
	# resp->step_id.job_id from 26.05 on.
	grep -q "^	uint32_t job_id;.*" \
		<(sed -n '/^typedef struct submit_response_msg {/,/^}/p' "$prefix/include/slurm/slurm.h") &&
		resp_id=job_id
	cc -O1 -DISLE_SUBMIT_JOB_ID="$resp_id" -o "$1/isle_submit" \
		"$ISLE_PT_REPO/tests/integration/isle_submit.c" \
		-I"$prefix/include" -L"$prefix/lib" -Wl,-rpath,"$prefix/lib" -lslurm
}

isle_pt_leaf() {
	local file=$1 name=$2 nodes=$3 gpus=$4 extra=${5:-} i sep=""
	{
		printf '{"version": 1, "name": "%s",\n "nodes": [' "$name"
		for ((i = 1; i <= nodes; i++)); do
			printf '%s\n  {"name": "%s", "rack": "r0", "gpus": %d, %s\n   "nics": [{"name": "mlx5_0", "rail": 0, "switch": "leaf0", "gbps": 400}]}' \
				"$sep" "$(isle__pt_name "$i")" "$gpus" "$extra"
			sep=,
		done
		printf '\n ],\n "switches": [{"name": "leaf0", "level": "leaf"}]}\n'
	}>"$file"
}
