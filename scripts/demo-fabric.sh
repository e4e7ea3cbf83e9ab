#!/bin/bash
# demo-fabric.sh: the simulated hardware of the demo, as an ibsim net file
# (ibnetdiscover's format) plus the facts InfiniBand cannot see (racks,
# multi-node NVLink domains), for `islectl build`.
#
# GB200-like layout: RACKS racks of NODES compute trays, GPUS GPUs each; a
# rack is one NVLink domain. Every tray has one ConnectX port per GPU
# (mlx5_0.. = rails). Racks are grouped RACKS_PER_SU at a time into scalable
# units: in a unit, rail r of every tray lands on the unit's leaf r
# (rail-optimized). Every leaf has UPLINKS cables, spread over SPINES spine
# switches, so the spine is oversubscribed (downlinks : uplinks).
#
# usage: scripts/demo-fabric.sh [--racks R] [--nodes N] [--gpus G]
#            [--racks-per-su S] [--spines P] [--uplinks U] OUTDIR
# writes OUTDIR/fabric.net (ibsim's input), OUTDIR/overrides.json (racks,
# NVLink domains, GPUs and their NICs, spine oversubscription: the admin's
# part of the cluster file), OUTDIR/layout.txt (one "RACK NODE..." line per
# rack) and prints the node hostlist.
set -euo pipefail

RACKS=2 NODES=4 GPUS=4 RACKS_PER_SU=1 SPINES=2 UPLINKS=2
while [ $# -gt 1 ]; do
	case $1 in
	--racks) RACKS=$2 ;;
	--nodes) NODES=$2 ;;
	--gpus) GPUS=$2 ;;
	--racks-per-su) RACKS_PER_SU=$2 ;;
	--spines) SPINES=$2 ;;
	--uplinks) UPLINKS=$2 ;;
	*) echo "demo-fabric: unknown option $1" >&2; exit 2 ;;
	esac
	shift 2
done
[ $# -eq 1 ] || { sed -n '2,19p' "$0" >&2; exit 2; }
OUT=$1
mkdir -p "$OUT"

total=$((RACKS * NODES))
width=2
[ "$total" -ge 100 ] && width=3
node_name() { printf 'n%0*d' "$width" "$1"; }
nsu=$(((RACKS + RACKS_PER_SU - 1) / RACKS_PER_SU))
# GUIDs: 0x0002c903 OUI-like prefix; switches 00a0xxxx, HCAs 00b0xxxx.
sw_guid() { printf '0002c90300a0%04x' "$1"; }
ca_guid() { printf '0002c90300b0%04x' "$1"; }
leaf_id() { echo $(($1 * GPUS + $2)); } # su rail
spine_id() { echo $((nsu * GPUS + $1)); }
ca_id() { echo $((($1 - 1) * GPUS + $2)); } # node(1-based) rail
# Node descriptions as an admin sets them on the switches; ibnetdiscover
# reports them and `islectl build` names the switches after them. A leaf is
# named after the rack it serves (or its scalable unit) and its rail.
leaf_desc() {
	if [ "$RACKS_PER_SU" = 1 ]; then
		echo "rack$1-leaf-rail$2"
	else
		echo "su$1-leaf-rail$2"
	fi
}
spine_desc() { echo "spine$1"; }

# Nodes of scalable unit s: racks s*RACKS_PER_SU .. +RACKS_PER_SU-1.
su_nodes() {
	local s=$1 r i
	for ((r = s * RACKS_PER_SU; r < (s + 1) * RACKS_PER_SU && r < RACKS; r++)); do
		for ((i = 1; i <= NODES; i++)); do echo $((r * NODES + i)); done
	done
}

{
	echo "# isle demo fabric: $RACKS racks x $NODES trays x $GPUS GPUs, $nsu scalable units,"
	echo "# rail-optimized leafs, $SPINES spines, $UPLINKS uplinks per leaf (scripts/demo-fabric.sh)"
	echo
	for ((s = 0; s < nsu; s++)); do
		for ((r = 0; r < GPUS; r++)); do
			id=$(leaf_id "$s" "$r")
			mapfile -t members < <(su_nodes "$s")
			ports=$((${#members[@]} + UPLINKS))
			printf 'Switch\t%d "S-%s"\t\t# "%s" enhanced port 0 lid %d lmc 0\n' \
				"$ports" "$(sw_guid "$id")" "$(leaf_desc "$s" "$r")" $((id + 1))
			p=1
			for n in "${members[@]}"; do
				printf '[%d]\t"H-%s"[1]\t\t# "%s mlx5_%d" lid %d 4xNDR\n' \
					"$p" "$(ca_guid "$(ca_id "$n" "$r")")" "$(node_name "$n")" "$r" \
					$((1000 + $(ca_id "$n" "$r")))
				p=$((p + 1))
			done
			for ((u = 0; u < UPLINKS; u++)); do
				sp=$((u % SPINES))
				# Spine port: one per (leaf, uplink) pair.
				spp=$(((s * GPUS + r) * ((UPLINKS + SPINES - 1) / SPINES) + u / SPINES + 1))
				printf '[%d]\t"S-%s"[%d]\t\t# "%s" lid %d 4xNDR\n' \
					"$p" "$(sw_guid "$(spine_id "$sp")")" "$spp" "$(spine_desc "$sp")" \
					$(($(spine_id "$sp") + 1))
				p=$((p + 1))
			done
			echo
		done
	done
	per_spine=$(((UPLINKS + SPINES - 1) / SPINES))
	for ((sp = 0; sp < SPINES; sp++)); do
		id=$(spine_id "$sp")
		printf 'Switch\t%d "S-%s"\t\t# "%s" enhanced port 0 lid %d lmc 0\n' \
			$((nsu * GPUS * per_spine)) "$(sw_guid "$id")" "$(spine_desc "$sp")" $((id + 1))
		for ((s = 0; s < nsu; s++)); do
			mapfile -t members < <(su_nodes "$s")
			for ((r = 0; r < GPUS; r++)); do
				for ((u = sp; u < UPLINKS; u += SPINES)); do
					spp=$(((s * GPUS + r) * per_spine + u / SPINES + 1))
					printf '[%d]\t"S-%s"[%d]\t\t# "%s" lid %d 4xNDR\n' \
						"$spp" "$(sw_guid "$(leaf_id "$s" "$r")")" \
						$((${#members[@]} + u + 1)) "$(leaf_desc "$s" "$r")" \
						$(($(leaf_id "$s" "$r") + 1))
				done
			done
		done
		echo
	done
	for ((n = 1; n <= total; n++)); do
		s=$((((n - 1) / NODES) / RACKS_PER_SU))
		mapfile -t members < <(su_nodes "$s")
		for ((i = 0; i < ${#members[@]}; i++)); do [ "${members[$i]}" = "$n" ] && break; done
		for ((r = 0; r < GPUS; r++)); do
			printf 'Ca\t1 "H-%s"\t\t# "%s mlx5_%d"\n' "$(ca_guid "$(ca_id "$n" "$r")")" \
				"$(node_name "$n")" "$r"
			printf '[1](%s)\t"S-%s"[%d]\t\t# lid %d lmc 0 "%s" lid %d 4xNDR\n' \
				"$(ca_guid "$(ca_id "$n" "$r")")" "$(sw_guid "$(leaf_id "$s" "$r")")" \
				$((i + 1)) $((1000 + $(ca_id "$n" "$r"))) "$(leaf_desc "$s" "$r")" \
				$(($(leaf_id "$s" "$r") + 1))
			echo
		done
	done
} >"$OUT/fabric.net"

{
	for ((r = 0; r < RACKS; r++)); do
		printf 'rack%d' "$r"
		for ((i = 1; i <= NODES; i++)); do printf ' %s' "$(node_name $((r * NODES + i)))"; done
		echo
	done
} >"$OUT/layout.txt"

# What InfiniBand cannot see, as an admin writes it for `islectl build
# --overrides`: trays per rack (one NVLink domain each), the GPUs of each
# tray with the NIC beside each GPU, and the spine's oversubscription as
# cabled (leaf downlinks : uplinks).
join() { # sep item...
	local sep=$1 out=$2
	shift 2
	for x in "$@"; do out+=$sep$x; done
	printf '%s' "$out"
}
node_items=() dom_items=() gpu_items=()
for ((g = 0; g < GPUS; g++)); do gpu_items+=("{\"nic\": \"mlx5_$g\"}"); done
while read -r rack members; do
	quoted=()
	for n in $members; do
		node_items+=("{\"name\": \"$n\", \"rack\": \"$rack\", \"gpus\": [$(join ', ' "${gpu_items[@]}")]}")
		quoted+=("\"$n\"")
	done
	dom_items+=("{\"name\": \"$rack-nvl\", \"nodes\": [$(join ', ' "${quoted[@]}")], \"bw_gbps\": 900}")
done <"$OUT/layout.txt"
oversub=$(((RACKS_PER_SU * NODES + UPLINKS - 1) / UPLINKS))
printf '{"version": 1,\n "tiers": {"island": {"bw_gbps": 900}, "spine": {"oversub": %d}},\n "nodes": [\n  %s\n ],\n "domains": [\n  %s\n ]\n}\n' \
	"$oversub" "$(join $',\n  ' "${node_items[@]}")" "$(join $',\n  ' "${dom_items[@]}")" >"$OUT/overrides.json"

printf 'n[%0*d-%0*d]\n' "$width" 1 "$width" "$total"
