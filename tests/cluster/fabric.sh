# shellcheck shell=bash
# tests/cluster/fabric.sh: the emulated fabric under the test cluster
# (isle_cluster_start --fabric CLUSTERFILE). Sourced by cluster.sh.
#
# Every test node is a network + UTS namespace named after the node, with
# two interfaces:
#   mg0  management network (slurmctld, slurmd, PMIx), one unshaped bridge,
#        198.18.0.0/16 (slurmctld 198.18.0.1, node i 198.18.H.L);
#   d0   data network 198.19.0.0/16: a copy of the cluster file's fabric
#        (`islectl emit fabric`): every switch (NVLink domain, leaf, spine,
#        core) a bridge, every cable a veth pair, rate-limited in both
#        directions by tbf at the tier bandwidth times the scale factor, with
#        the tier latency through netem where the kernel has it.
# slurmctld runs in a namespace of its own (mg0 only). The bridges and the
# switch-side cable ends live in one more namespace, "<prefix>-fab". All
# namespaces are named <prefix>-*, prefix = isf-<run id>; devices are made
# inside them only, so their short names cannot meet anyone else's. The list
# is kept in DIR/fabric/netns and removed by isle__fabric_down (also from the
# reaper when the owning shell dies without its traps).

isle__fabric_mgmt_ip() { # node index (1-based)
	echo "198.18.$(($1 / 250 + 1)).$(($1 % 250 + 2))"
}
isle__fabric_data_ip() {
	echo "198.19.$(($1 / 250 + 1)).$(($1 % 250 + 2))"
}

isle__fabric_ns_add() { # dir name
	if ! ip netns add "$2"; then
		isle__err "cannot create network namespace $2"
		return 1
	fi
	echo "$2" >>"$1/fabric/netns"
	ip -n "$2" link set lo up
}

# tc on one cable end: tbf at RATE bit/s, netem delay LAT_US under it.
isle__fabric_shape() { # dir ns dev rate_bit lat_us
	local d=$1 ns=$2 dev=$3 rate=$4 lat=$5 burst
	# Burst: 4 ms of traffic, at least two jumbo frames (tbf needs > MTU).
	burst=$((rate / 8 / 250))
	[ "$burst" -lt 32768 ] && burst=32768
	if ! nsenter --net="/run/netns/$ns" tc qdisc add dev "$dev" root handle 1: \
		tbf rate "${rate}bit" burst "$burst" latency 200ms; then
		isle__err "tc tbf on $ns/$dev failed (sch_tbf missing?)"
		return 1
	fi
	if [ "$(cat "$d/fabric/netem")" = 1 ] && [ "${lat%.*}" != 0 ]; then
		nsenter --net="/run/netns/$ns" tc qdisc add dev "$dev" parent 1:1 handle 10: \
			netem delay "${lat}us" limit 100000 2>/dev/null ||
			isle__err "tc netem on $ns/$dev failed"
	fi
	return 0
}

# isle__fabric_plan FILE: writes DIR/fabric/plan (islectl emit fabric).
isle__fabric_plan() { # dir clusterfile
	local d=$1 f=$2 islectl=$ISLE__REPO/build/bin/islectl
	mkdir -p "$d/fabric" || return 1
	if [ ! -x "$islectl" ]; then
		isle__err "--fabric needs $islectl (run make)"
		return 1
	fi
	if ! "$islectl" emit fabric "$f" >"$d/fabric/plan" 2>"$d/fabric/plan.err"; then
		isle__err "islectl emit fabric $f failed: $(head -3 "$d/fabric/plan.err")"
		return 1
	fi
}

# Node names of a plan, in file order.
isle__fabric_nodes() { # plan
	awk '$1 == "node" { print $2 }' "$1"
}

# isle__fabric_up DIR SCALE: namespaces, bridges, cables. Node i of the
# cluster is the i-th node of the plan.
isle__fabric_up() {
	local d=$1 scale=$2 plan=$1/fabric/plan p
	p=isf-${d##*.}
	echo "$p" >"$d/fabric/prefix"
	: >"$d/fabric/netns"
	: >"$d/fabric/cables"
	# netem is optional (latency); tbf is not.
	local probe=$p-probe
	isle__fabric_ns_add "$d" "$probe" || return 1
	ip -n "$probe" link add t0 type veth peer name t1 || return 1
	if nsenter --net="/run/netns/$probe" tc qdisc add dev t0 root netem delay 1us 2>/dev/null; then
		echo 1 >"$d/fabric/netem"
	else
		echo 0 >"$d/fabric/netem"
		isle__msg "fabric: the kernel has no netem (sch_netem): cable latencies are not emulated, bandwidths are"
	fi
	ip netns del "$probe"
	sed -i "/^$probe\$/d" "$d/fabric/netns"

	local fab=$p-fab
	isle__fabric_ns_add "$d" "$fab" || return 1
	ip -n "$fab" link add mgmt type bridge && ip -n "$fab" link set mgmt up || return 1
	# Bridges: b<k> for the k-th switch of the plan.
	local -A br=() nidx=()
	local k=0 kind name lvl a b gbit lat tier rate
	while read -r kind name lvl; do
		[ "$kind" = switch ] || continue
		br[$name]=b$k
		echo "bridge b$k $name $lvl" >>"$d/fabric/bridges"
		ip -n "$fab" link add "b$k" type bridge || return 1
		ip -n "$fab" link set "b$k" up || return 1
		k=$((k + 1))
	done <"$plan"
	# Controller: management only.
	local ctl=$p-ctl
	isle__fabric_ns_add "$d" "$ctl" || return 1
	ip link add mg0 netns "$ctl" type veth peer name mc netns "$fab" || return 1
	ip -n "$fab" link set mc master mgmt up || return 1
	ip -n "$ctl" addr add 198.18.0.1/16 dev mg0 && ip -n "$ctl" link set mg0 up || return 1
	# Nodes: management port (m<i>) and the namespace; the data cable below.
	local i=0 ns
	while read -r name; do
		i=$((i + 1))
		nidx[$name]=$i
		ns=$p-$name
		isle__fabric_ns_add "$d" "$ns" || return 1
		ip link add mg0 netns "$ns" type veth peer name "m$i" netns "$fab" || return 1
		ip -n "$fab" link set "m$i" master mgmt up || return 1
		ip -n "$ns" addr add "$(isle__fabric_mgmt_ip "$i")/16" dev mg0 || return 1
		ip -n "$ns" link set mg0 up || return 1
		echo "node $name $i $ns $(isle__fabric_mgmt_ip "$i") $(isle__fabric_data_ip "$i")" >>"$d/fabric/nodes"
	done < <(isle__fabric_nodes "$plan")
	# Cables: node -> bridge (d0 in the node, n<i> at the switch), and
	# switch -> switch (u<k> at the lower bridge, v<k> at the upper one).
	k=0
	while read -r kind a b gbit lat tier; do
		[ "$kind" = cable ] || continue
		rate=$(awk -v g="$gbit" -v s="$scale" 'BEGIN { r = g * 1e9 * s; if (r < 8000) r = 8000; printf "%.0f", r }')
		if [ -n "${nidx[$a]:-}" ]; then
			i=${nidx[$a]}
			ns=$p-$a
			ip link add d0 netns "$ns" mtu 9000 type veth peer name "n$i" netns "$fab" mtu 9000 || return 1
			ip -n "$fab" link set "n$i" master "${br[$b]}" up || return 1
			ip -n "$ns" addr add "$(isle__fabric_data_ip "$i")/16" dev d0 || return 1
			ip -n "$ns" link set d0 up || return 1
			isle__fabric_shape "$d" "$ns" d0 "$rate" "$lat" || return 1
			isle__fabric_shape "$d" "$fab" "n$i" "$rate" "$lat" || return 1
			echo "cable $a $b $tier $rate $ns d0 $fab n$i" >>"$d/fabric/cables"
		else
			[ -n "${br[$a]:-}" ] && [ -n "${br[$b]:-}" ] || {
				isle__err "fabric plan: cable $a - $b names an unknown switch"
				return 1
			}
			ip -n "$fab" link add "u$k" mtu 9000 type veth peer name "v$k" mtu 9000 || return 1
			ip -n "$fab" link set "u$k" master "${br[$a]}" up || return 1
			ip -n "$fab" link set "v$k" master "${br[$b]}" up || return 1
			isle__fabric_shape "$d" "$fab" "u$k" "$rate" "$lat" || return 1
			isle__fabric_shape "$d" "$fab" "v$k" "$rate" "$lat" || return 1
			echo "cable $a $b $tier $rate $fab u$k $fab v$k" >>"$d/fabric/cables"
			k=$((k + 1))
		fi
	done <"$plan"
	if [ "$i" -eq 0 ]; then
		isle__err "fabric plan has no nodes"
		return 1
	fi
	return 0
}

# Client wrappers in DIR/bin: Slurm's clients run in the controller's
# namespace when called from outside the fabric (from a job on a node they
# are already on the management network).
isle__fabric_wrappers() { # dir
	local d=$1 p c hostns
	p=$(cat "$d/fabric/prefix")
	hostns=$(readlink /proc/self/ns/net)
	mkdir -p "$d/bin"
	for c in sbatch srun salloc squeue scontrol scancel sinfo sacct sattach sstat sprio sshare sdiag; do
		[ -x "$ISLE_SLURM_PREFIX/bin/$c" ] || continue
		cat >"$d/bin/$c" <<EOF
#!/bin/sh
# Generated by tests/cluster/fabric.sh: $c on the fabric's management network.
if [ "\$(readlink /proc/self/ns/net)" = "$hostns" ]; then
	exec nsenter --net=/run/netns/$p-ctl "$ISLE_SLURM_PREFIX/bin/$c" "\$@"
fi
exec "$ISLE_SLURM_PREFIX/bin/$c" "\$@"
EOF
		chmod +x "$d/bin/$c"
	done
}

# The command line that runs CMD... as node NAME (or "ctl") inside the fabric.
isle__fabric_cmd() { # dir name
	local d=$1 name=$2 p
	p=$(cat "$d/fabric/prefix")
	printf '%s\n' nsenter "--net=/run/netns/$p-$name" unshare --uts sh -c "hostname $name && exec \"\$@\"" sh
}

# isle_fabric_counters [DIR]: one line per cable:
#   "A B TIER RATE_BIT BYTES_A_TO_B BYTES_B_TO_A"
# from the kernel's interface counters (tx bytes of each end), read over
# netlink in each namespace (/sys/class/net shows the caller's namespace).
isle_fabric_counters() {
	local -
	set +euo pipefail
	local d=${1:-${ISLE_CLUSTER_DIR:-}} kind a b tier rate nsa deva nsb devb ns
	[ -n "$d" ] && [ -f "$d/fabric/cables" ] || {
		isle__err "no fabric in ${d:-?}"
		return 1
	}
	local -A tx=()
	local dev bytes
	for ns in $(awk '{ print $6; print $8 }' "$d/fabric/cables" | sort -u); do
		while read -r dev bytes; do
			tx[$ns/$dev]=$bytes
		done < <(ip -n "$ns" -s -o link show 2>/dev/null | awk '
			# -o puts each link on one line: "N: DEV@PEER: ... TX: bytes
			# packets ... \ BYTES PACKETS ...": the first number after TX:.
			{ dev = $2; sub(/@.*/, "", dev); sub(/:$/, "", dev)
			  i = index($0, "TX:"); if (!i) next
			  n = split(substr($0, i + 3), f, /[ \\]+/)
			  for (j = 1; j <= n; j++) if (f[j] ~ /^[0-9]+$/) { print dev, f[j]; break } }')
	done
	while read -r kind a b tier rate nsa deva nsb devb; do
		echo "$a $b $tier $rate ${tx[$nsa/$deva]:-0} ${tx[$nsb/$devb]:-0}"
	done <"$d/fabric/cables"
}

# Remove every namespace of the run (and with them every bridge and veth),
# after ending whatever still runs inside them (only ours can).
isle__fabric_down() { # dir
	local d=$1 ns pid
	[ -f "$d/fabric/netns" ] || return 0
	if [ -f "$d/fabric/cables" ] && [ ! -f "$d/fabric/counters.final" ]; then
		isle_fabric_counters "$d" >"$d/fabric/counters.final" 2>/dev/null
	fi
	while read -r ns; do
		[ -n "$ns" ] || continue
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -KILL "$pid" 2>/dev/null
		done
	done <"$d/fabric/netns"
	while read -r ns; do
		[ -n "$ns" ] || continue
		[ -e "/run/netns/$ns" ] || continue
		ip netns del "$ns" 2>/dev/null || isle__err "ip netns del $ns failed"
	done <"$d/fabric/netns"
	return 0
}

# A watcher that tears the run down when the shell that owns it dies
# without running its traps (SIGKILL). It shares the mount namespace, so
# it sees the run's sack dirs and /run/netns entries.
isle__fabric_reaper() { # dir owner_pid
	local d=$1 owner=$2
	(
		set +euo pipefail
		trap '' INT HUP
		trap 'exit 0' TERM
		for f in /proc/"$BASHPID"/fd/*; do
			f=${f##*/}
			[ "$f" -gt 2 ] 2>/dev/null && eval "exec $f>&-" 2>/dev/null
		done
		while kill -0 "$owner" 2>/dev/null && [ -d "$d" ]; do
			sleep 1
		done
		if [ -d "$d" ]; then
			ISLE__REAPING=1 isle__stop_dir "$d"
		fi
	) </dev/null >>"$d/log/reaper.log" 2>&1 &
	echo "$!" >"$d/fabric/reaper.pid"
	disown $! 2>/dev/null || true
}

isle__fabric_check_tools() {
	local t
	for t in ip tc nsenter unshare; do
		command -v "$t" >/dev/null || { isle__err "--fabric needs $t"; return 1; }
	done
}
