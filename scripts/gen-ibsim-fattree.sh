#!/bin/bash
# gen-ibsim-fattree.sh - writes an ibsim net file for a rail-optimized,
# two-level fat tree, in ibnetdiscover's own format (so isle's dump reader
# reads the net file itself as the ground truth of a round trip).
#
#   scripts/gen-ibsim-fattree.sh [--hosts N] [--rails R] [--hosts-per-leaf H]
#                                [--spines S] [--uplinks U] [--speed HDR]
#                                [--prefix gpu] > fabric.net
#
# Every host has R HCAs (mlx5_0 .. mlx5_{R-1}); HCA r of every host is
# cabled to a leaf of rail r, H hosts per leaf; every leaf has U cables to
# every spine. Defaults: 128 hosts, 2 rails, 16 hosts per leaf, 8 spines, 1
# uplink, 4xHDR (ibsim 0.10 reports NDR links as SDR; HDR survives).
# ibsim's limits are checked: 2048 nodes, 256 switches, 13312 ports.
set -euo pipefail

hosts=128 rails=2 per_leaf=16 spines=8 uplinks=1 speed=HDR prefix=gpu
usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
while [ $# -gt 0 ]; do
	case $1 in
	--hosts) hosts=$2; shift 2 ;;
	--rails) rails=$2; shift 2 ;;
	--hosts-per-leaf) per_leaf=$2; shift 2 ;;
	--spines) spines=$2; shift 2 ;;
	--uplinks) uplinks=$2; shift 2 ;;
	--speed) speed=$2; shift 2 ;;
	--prefix) prefix=$2; shift 2 ;;
	-h|--help) usage 0 ;;
	*) echo "gen-ibsim-fattree: unknown option $1" >&2; usage ;;
	esac
done
for v in "$hosts" "$rails" "$per_leaf" "$spines" "$uplinks"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "gen-ibsim-fattree: '$v' is not a positive number" >&2; exit 2; }
done

leafs_per_rail=$(((hosts + per_leaf - 1) / per_leaf))
leafs=$((rails * leafs_per_rail))
switches=$((leafs + spines))
cas=$((hosts * rails))
leaf_ports=$((per_leaf + spines * uplinks))
spine_ports=$((leafs * uplinks))
ports=$((leafs * (leaf_ports + 1) + spines * (spine_ports + 1) + cas * 2))
fail() { echo "gen-ibsim-fattree: $*" >&2; exit 1; }
[ $((switches + cas)) -le 2048 ] || fail "$((switches + cas)) nodes: ibsim takes at most 2048"
[ $switches -le 256 ] || fail "$switches switches: ibsim takes at most 256"
[ $ports -le 13312 ] || fail "$ports ports: ibsim takes at most 13312"
[ $leaf_ports -le 255 ] && [ $spine_ports -le 255 ] || fail "a switch would need more than 255 ports"

# GUIDs: 0x0002c90300 + kind (1 leaf, 2 spine, 3 CA) + a 5-digit number.
# The helpers set variables (printf -v): no subshell per line.
leaf() { printf -v lg '0002c903001%05x' $(($1 * leafs_per_rail + $2)); printf -v ld 'leaf-r%d-%02d' "$1" $(($2 + 1)); }
spine() { printf -v sg '0002c903002%05x' "$1"; printf -v sd 'spine-%02d' $(($1 + 1)); }
ca() { printf -v cg '0002c903003%05x' $(($1 * rails + $2)); printf -v hn '%s%03d' "$prefix" $(($1 + 1)); }

echo "# ibsim net file: rail-optimized fat tree, $hosts hosts x $rails rails,"
echo "# $leafs leafs ($per_leaf hosts each), $spines spines, $uplinks uplink(s) per leaf-spine pair, 4x$speed."
echo "# Written by scripts/gen-ibsim-fattree.sh; ibnetdiscover format."
echo

for ((r = 0; r < rails; r++)); do
	for ((l = 0; l < leafs_per_rail; l++)); do
		leaf $r $l
		echo "switchguid=0x$lg"
		printf 'Switch\t%d "S-%s"\t\t# "%s"\n' "$leaf_ports" "$lg" "$ld"
		for ((p = 0; p < per_leaf; p++)); do
			h=$((l * per_leaf + p))
			[ $h -lt $hosts ] || break
			ca $h $r
			printf '[%d]\t"H-%s"[1]\t\t# "%s mlx5_%d" lid 0 4x%s\n' $((p + 1)) \
				"$cg" "$hn" "$r" "$speed"
		done
		lidx=$((r * leafs_per_rail + l))
		for ((s = 0; s < spines; s++)); do
			spine $s
			for ((u = 0; u < uplinks; u++)); do
				printf '[%d]\t"S-%s"[%d]\t\t# "%s" lid 0 4x%s\n' \
					$((per_leaf + s * uplinks + u + 1)) "$sg" \
					$((lidx * uplinks + u + 1)) "$sd" "$speed"
			done
		done
		echo
	done
done

for ((s = 0; s < spines; s++)); do
	spine $s
	echo "switchguid=0x$sg"
	printf 'Switch\t%d "S-%s"\t\t# "%s"\n' "$spine_ports" "$sg" "$sd"
	for ((r = 0; r < rails; r++)); do
		for ((l = 0; l < leafs_per_rail; l++)); do
			leaf $r $l
			lidx=$((r * leafs_per_rail + l))
			for ((u = 0; u < uplinks; u++)); do
				printf '[%d]\t"S-%s"[%d]\t\t# "%s" lid 0 4x%s\n' \
					$((lidx * uplinks + u + 1)) "$lg" \
					$((per_leaf + s * uplinks + u + 1)) "$ld" "$speed"
			done
		done
	done
	echo
done

for ((h = 0; h < hosts; h++)); do
	l=$((h / per_leaf))
	p=$((h % per_leaf + 1))
	for ((r = 0; r < rails; r++)); do
		ca $h $r
		leaf $r $l
		echo "caguid=0x$cg"
		printf 'Ca\t1 "H-%s"\t\t# "%s mlx5_%d"\n' "$cg" "$hn" "$r"
		printf '[1]\t"S-%s"[%d]\t\t# lid 0 lmc 0 "%s" lid 0 4x%s\n' \
			"$lg" "$p" "$ld" "$speed"
		echo
	done
done
