# shellcheck shell=bash
# tests/crosscheck/crosscheck.sh: helpers of the baseline cross-check
# (tests/integration/35-baseline-crosscheck.sh): run a job sequence
# (tests/crosscheck/jobs.txt) on a running test cluster, replay it in
# islesim from the same states, and compare. Source after
# tests/cluster/cluster.sh.
#
# xc_emit CLUSTER_JSON DIR   DIR/topology-tree.conf, DIR/topology-block.conf
#                            and DIR/gres.conf (islectl emit; devices @DEVDIR@)
# xc_slurm_run SEQ OUT       submit each job of SEQ in order (sbatch, sleep),
#                            wait until it runs or Slurm has tried and left it
#                            pending (then cancel it); OUT gets one
#                            "LABEL node,node,..." line per job ("-": pending);
#                            XC_VERBOSE=1 also prints each result on stderr;
#                            XC_SBATCH_EXTRA: more sbatch arguments
# xc_replay SEQ SLURM_OUT POLICY CLUSTER_JSON OUT
#                            islesim --replay of SEQ where each decision is
#                            made from the state Slurm was in (the jobs before
#                            it hold the nodes Slurm gave them); OUT gets
#                            "LABEL node,..." lines
#                            XC_SLURM_RELEASE (e.g. 26.05): the release
#                            islesim's tree and block follow
# xc_gen SEED N              a random sequence of N jobs on the 16 x 4
#                            cross-check cluster: single-node jobs of 1-4
#                            GPUs and 2-6 node jobs of 4 GPUs per node, as
#                            users submit them; a running job ends now and
#                            then ('end LABEL' lines), so the cluster does
#                            not fill up; every decision asserted (=)
# xc_compare SEQ POLICY SLURM_OUT SIM_OUT   prints the table rows and sets
#                            XC_SAME XC_JOBS (policy decisions; XC_WAITS of
#                            the same ones: both leave the job waiting), XC_FAIL
#                            (asserted jobs that differ), XC_KNOWN (known
#                            differences seen), XC_NOWSAME (known differences
#                            that now agree)

XC_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${XC_ISLECTL:=$XC_REPO/build/bin/islectl}"
: "${XC_ISLESIM:=$XC_REPO/build/bin/islesim}"
: "${XC_WAIT:=30}"

# Job lines of a sequence file: "LABEL NODES GPN PIN TREE BLOCK", or
# "end LABEL": job LABEL ends (scancel) before the next job.
xc__jobs() {
	grep -v '^[[:space:]]*\(#\|$\)' "$1"
}

xc_emit() { # cluster.json dir
	local c=$1 d=$2
	mkdir -p "$d" || return 1
	"$XC_ISLECTL" emit slurm-tree -o "$d/topology-tree.conf" "$c" || return 1
	"$XC_ISLECTL" emit slurm-block -o "$d/topology-block.conf" "$c" || return 1
	{
		echo "AutoDetect=off"
		"$XC_ISLECTL" emit gres --dev-dir @DEVDIR@ "$c"
	} >"$d/gres.conf" || return 1
}

# Waits for job $1: prints its expanded node list when it runs, "-" when
# Slurm evaluated it and left it pending (Reason other than None). Returns
# 1 on timeout or another end.
xc__wait_start() {
	local j=$1 st r end=$((SECONDS + XC_WAIT))
	while [ $SECONDS -lt $end ]; do
		read -r st r < <(squeue -h -j "$j" -o "%T %r" 2>/dev/null)
		case $st in
		RUNNING)
			scontrol show hostnames "$(squeue -h -j "$j" -o %N)" | paste -sd, -
			return 0
			;;
		PENDING)
			case $r in
			None | "") ;;
			*)
				echo "-"
				return 0
				;;
			esac
			;;
		"") ;; # not listed yet / squeue hiccup: poll again
		*)
			echo "job $j ended early: $st $r" >&2
			return 1
			;;
		esac
		sleep 0.5
	done
	echo "job $j: neither running nor evaluated after ${XC_WAIT}s" >&2
	return 1
}

xc_slurm_run() { # seq out
	local label nodes gpn pin rest j got t0
	: >"$2"
	while read -r label nodes gpn pin rest; do
		if [ "$label" = end ]; then
			scancel -n "$nodes" || return 1
			t0=$((SECONDS + XC_WAIT))
			while [ -n "$(squeue -h -n "$nodes" -o %i 2>/dev/null)" ]; do
				[ $SECONDS -lt $t0 ] || return 1
				sleep 0.2
			done
			continue
		fi
		if [ "$pin" != - ]; then
			j=$(sbatch --parsable -J "$label" -N "$nodes" -w "$pin" \
				--gpus-per-node="$gpn" $XC_SBATCH_EXTRA -o /dev/null \
				--wrap "sleep 900") || return 1
		else
			# shellcheck disable=SC2046 # words on purpose
			j=$(sbatch --parsable -J "$label" -N "$nodes" \
				--gpus-per-node="$gpn" $XC_SBATCH_EXTRA \
				$(xc_job_args "$nodes") -o /dev/null \
				--wrap "sleep 900") || return 1
		fi
		t0=$SECONDS
		got=$(xc__wait_start "$j") || return 1
		[ -n "${XC_VERBOSE:-}" ] && echo "xc: $label -> $got ($((SECONDS - t0))s)" >&2
		# A job Slurm cannot place now stays out of the state: cancel it
		# so that it does not start later or block the queue.
		[ "$got" = - ] && scancel "$j"
		echo "$label $got" >>"$2"
	done < <(xc__jobs "$1")
}

# What a careful user adds for islesim's tree-sw and block-seg (policies.c):
# --switches=1 for a job of 2 to XC_LEAF_NODES nodes (one that fits under
# one leaf), --segment=2 for a job of an even node count (segments of one
# NVLink domain of the cross-check cluster). XC_JOB_ARGS: tree-sw,
# block-seg or empty.
xc_job_args() { # nodes
	case ${XC_JOB_ARGS:-} in
	tree-sw)
		[ "$1" -ge 2 ] && [ "$1" -le "${XC_LEAF_NODES:-4}" ] && echo "--switches=1" ;;
	block-seg)
		[ "$1" -ge 2 ] && [ $(($1 % 2)) -eq 0 ] && echo "--segment=2" ;;
	esac
	return 0
}

xc_replay() { # seq slurm_out policy cluster.json out
	local seq=$1 so=$2 pol=$3 cl=$4 out=$5 label nodes gpn pin rest actual rf
	rf=$(mktemp "${TMPDIR:-/tmp}/isle-xc-replay.XXXXXX") || return 1
	while read -r label nodes gpn pin rest; do
		if [ "$label" = end ]; then
			echo "end $nodes"
			continue
		fi
		actual=$(awk -v l="$label" '$1 == l { print $2 }' "$so")
		[ -n "$actual" ] || actual=-
		echo "$label $nodes $gpn $pin $actual"
	done < <(xc__jobs "$seq") >"$rf"
	"$XC_ISLESIM" --cluster "$cl" --policy "$pol" --replay "$rf" \
		${XC_SLURM_RELEASE:+--slurm-release "$XC_SLURM_RELEASE"} |
		awk -v p="$pol" '$1 == p { print $2, $3 }' >"$out"
	local rc=${PIPESTATUS[0]}
	rm -f "$rf"
	return "$rc"
}

xc_compare() { # seq policy slurm_out sim_out
	local seq=$1 pol=$2 so=$3 sim=$4 label nodes gpn pin t b want s i verdict
	XC_SAME=0 XC_JOBS=0 XC_FAIL=0 XC_KNOWN=0 XC_NOWSAME=0 XC_WAITS=0
	while read -r label nodes gpn pin t b; do
		[ "$label" = end ] && continue
		# known differences are listed for tree and block; every other
		# policy's decisions are asserted
		want==
		[ "$pol" = tree ] && want=$t
		[ "$pol" = block ] && want=$b
		s=$(awk -v l="$label" '$1 == l { print $2 }' "$so")
		i=$(awk -v l="$label" '$1 == l { print $2 }' "$sim")
		if [ "$pin" != - ]; then
			verdict="held (-w $pin)"
		elif [ "$s" = "$i" ]; then
			XC_JOBS=$((XC_JOBS + 1)) XC_SAME=$((XC_SAME + 1))
			verdict=same
			if [ "$s" = - ]; then
				verdict="same (both wait)"
				XC_WAITS=$((XC_WAITS + 1))
			fi
			if [ "$want" != = ]; then
				verdict="same (known difference $want did not show)"
				XC_NOWSAME=$((XC_NOWSAME + 1))
			fi
		else
			XC_JOBS=$((XC_JOBS + 1))
			if [ "$want" = = ]; then
				verdict="DIFFERENT (asserted)"
				XC_FAIL=$((XC_FAIL + 1))
			else
				verdict="different, known: $want"
				XC_KNOWN=$((XC_KNOWN + 1))
			fi
		fi
		printf '| %-6s | %-5s | %-5s | %-22s | %-22s | %s |\n' "$pol" "$label" \
			"${nodes}x$gpn" "${s:-?}" "${i:-?}" "$verdict"
	done < <(xc__jobs "$seq")
}

xc_gen() { # seed n
	local i=0 r nodes gpn k live=() keep
	RANDOM=$1
	echo "# generated: xc_gen $1 $2"
	while [ $i -lt "$2" ]; do
		# about one job in three ends a running one, oldest first
		if [ ${#live[@]} -gt 3 ] && [ $((RANDOM % 3)) -eq 0 ]; then
			k=$((RANDOM % 2))
			echo "end ${live[$k]}"
			keep=()
			for r in "${!live[@]}"; do
				[ "$r" -eq "$k" ] || keep+=("${live[$r]}")
			done
			live=("${keep[@]}")
		fi
		r=$((RANDOM % 10))
		if [ $r -lt 5 ]; then
			nodes=1 gpn=$((1 + RANDOM % 3)) # part of a node
		elif [ $r -lt 7 ]; then
			nodes=1 gpn=4
		else
			nodes=$((2 + RANDOM % 5)) gpn=4
		fi
		i=$((i + 1))
		echo "s$1-$i $nodes $gpn - = ="
		live+=("s$1-$i")
	done
}
