#!/bin/bash
# 21-islectl-build: the admin workflow on a real fabric dump, no daemons.
#
# islectl build reads the X5 cluster's ibnetdiscover dump with its GUID map
# plus an overrides file (racks, a tier, a node's GPUs); the result must
# validate, save back unchanged, and give the same leaf switches with the
# same nodes as the topology.conf the X5 admins generated themselves. Also
# checks that validate fails (exit 1, JSON path) on a broken file and that
# dot draws a picture.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
islectl=$root/build/bin/islectl
data=${ISLE_TEST_DATA:-$root/../shared/data}/ibnetdiscover

[ -x "$islectl" ] || { echo "FAIL: $islectl not built (run make)"; exit 1; }
for f in X5.topofile X5.map X5.spine X5.topology.conf; do
	[ -r "$data/$f" ] || { echo "SKIP: test data $data/$f missing (set ISLE_TEST_DATA)"; exit 77; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-21-build.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

cat >"$work/overrides.json" <<'EOF'
{
  "_note": "what discovery cannot see",
  "tiers": {"spine": {"oversub": 2}},
  "racks": [{"name": "rack-sl390", "nodes": ["sl390lin[101-124]"]}],
  "nodes": [{"name": "sl390lin101", "gpus": 2, "nvlinks": [[0, 1, 4]]}]
}
EOF

"$islectl" build --ibnetdiscover "$data/X5.topofile" --map "$data/X5.map" \
	--overrides "$work/overrides.json" --name x5 -o "$work/x5.json" \
	2>"$work/build.err" || fail "build: $(cat "$work/build.err")"
"$islectl" validate "$work/x5.json" >"$work/validate.out" 2>&1 ||
	fail "validate: $(cat "$work/validate.out")"
grep -q "ok: 89 nodes, 2 GPUs" "$work/validate.out" || fail "validate: $(cat "$work/validate.out")"

# The saved form is canonical: build output -> load -> save is unchanged.
"$islectl" build --overrides "$work/x5.json" -o "$work/again.json" 2>/dev/null ||
	fail "rebuild from the saved file"
cmp -s "$work/x5.json" "$work/again.json" || fail "saved file changes on a second save"

# Plain JSON loads through isle's own parser, anything else through json-c;
# both must read the same model (a comment and \u escapes take json-c's).
{ echo '/* kept by an admin */'; sed 's/"name": "x5"/"name": "\\u0078\\u0035"/' "$work/x5.json"; } >"$work/x5c.json"
grep -q 'u0078' "$work/x5c.json" || fail "test setup: no escape in x5c.json"
"$islectl" build --overrides "$work/x5c.json" -o "$work/again2.json" 2>/dev/null ||
	fail "rebuild from a file with a comment"
cmp -s "$work/x5.json" "$work/again2.json" || fail "json-c path reads a different model"

"$islectl" show "$work/x5.json" >"$work/show.out" || fail "show"
grep -q "rack-sl390 (24 nodes): sl390lin\[101-124\]" "$work/show.out" || fail "show: racks"
grep -q "spine 25/5" "$work/show.out" || fail "show: tier override"

# Leaf switches and their nodes match the admins' own topology.conf.
"$islectl" emit slurm-tree -o "$work/topology.conf" "$work/x5.json" || fail "emit slurm-tree"
leafs() { grep -o 'SwitchName=[^ ]* Nodes=[^ ]*' "$1" | sort; }
diff <(leafs "$data/X5.topology.conf") <(leafs "$work/topology.conf") >"$work/leafs.diff" ||
	fail "leaf switches differ from X5.topology.conf: $(cat "$work/leafs.diff")"

# Regression: a bad --cores used to leave the -o file truncated (an admin's
# gres.conf wiped); now it fails before opening it.
echo "keep me" >"$work/gres.conf"
"$islectl" emit gres --cores 7-2 -o "$work/gres.conf" "$work/x5.json" 2>"$work/gres.err" &&
	fail "emit gres accepted --cores 7-2"
grep -q "bad --cores '7-2'" "$work/gres.err" || fail "emit gres message: $(cat "$work/gres.err")"
[ "$(cat "$work/gres.conf")" = "keep me" ] || fail "failed emit gres changed the -o file"

# A broken file: exit 1 and the JSON path of the problem.
sed 's/"gpus": 2/"gpus": "two"/' "$work/x5.json" >"$work/bad.json"
"$islectl" validate "$work/bad.json" >/dev/null 2>"$work/bad.err"
rc=$?
[ $rc -eq 1 ] || fail "validate of a broken file exited $rc"
grep -q 'bad.json: \$\.nodes\[[0-9]*\]\.gpus: expected integer or array' "$work/bad.err" ||
	fail "validate message: $(cat "$work/bad.err")"

# --spines: switches in the spine list are never leafs (X5.spine format);
# X5.spine itself agrees with the inferred levels.
"$islectl" build --ibnetdiscover "$data/X5.topofile" --map "$data/X5.map" \
	--spines "$data/X5.spine" -o "$work/x5s.json" 2>"$work/spines.err" ||
	fail "build --spines: $(cat "$work/spines.err")"
leaf='S-0002c902004827b0'
grep -q "\"name\": \"$leaf\", \"guid\": \"[^\"]*\", \"level\": \"leaf\"" "$work/x5s.json" ||
	fail "build --spines X5.spine: $leaf is not a leaf"
echo "$leaf" >"$work/spines"
"$islectl" build --ibnetdiscover "$data/X5.topofile" --map "$data/X5.map" \
	--spines "$work/spines" -o "$work/x5s.json" 2>"$work/spines.err" ||
	fail "build --spines: $(cat "$work/spines.err")"
grep -q "\"name\": \"$leaf\", \"guid\": \"[^\"]*\", \"level\": \"leaf\"" "$work/x5s.json" &&
	fail "build --spines: $leaf listed as a spine is still a leaf"

# GB200-style multi-node NVLink: node JSONs (the discover golden format)
# whose GPUs share an NVML fabric clique become one island; another clique
# of the same cluster UUID does not join it.
golden=$root/tests/golden/discover/cts1-pascal.json
mkdir -p "$work/nodes"
for h in gb01 gb02 gb03; do
	clique=7
	[ $h = gb03 ] && clique=8
	sed -e "s/\"hostname\": \"pascal4\"/\"hostname\": \"$h\"/" \
		-e "s/\"fabric\": null/\"fabric\": {\"cluster_uuid\": \"6a5f1c2e-0000-4000-8000-00000000abcd\", \"clique\": $clique}/" \
		-e "s/0xec0d9a030067fdd4/0xec0d9a030067fd0${h: -1}/g" \
		"$golden" >"$work/nodes/$h.json"
done
grep -q '"clique": 8' "$work/nodes/gb03.json" || fail "test setup: no fabric in node JSON"
"$islectl" build --node-json "$work/nodes" -o "$work/gb.json" 2>"$work/gb.err" ||
	fail "build from node JSONs: $(cat "$work/gb.err")"
"$islectl" show "$work/gb.json" >"$work/gb.show" || fail "show gb.json"
grep -q '(NVLink domain): 2 nodes, 4 GPUs: gb\[01-02\]$' "$work/gb.show" ||
	fail "no multi-node island for the shared clique: $(cat "$work/gb.show")"
[ "$(grep -c 'NVLink domain' "$work/gb.show")" = 1 ] ||
	fail "a single-node clique became a domain: $(cat "$work/gb.show")"

# --nodes: a subset of the fabric, with only the node files of its hosts.
mkdir -p "$work/subnodes"
for h in sl390lin101 sl390lin102 r422node1; do
	sed -e "s/\"hostname\": \"pascal4\"/\"hostname\": \"$h\"/" "$golden" >"$work/subnodes/$h.json"
done
"$islectl" build --ibnetdiscover "$data/X5.topofile" --map "$data/X5.map" \
	--node-json "$work/subnodes" --nodes 'sl390lin[101-104]' -o "$work/sub.json" \
	2>"$work/sub.err" || fail "build --nodes: $(cat "$work/sub.err")"
"$islectl" validate "$work/sub.json" >"$work/sub.out" 2>&1 || fail "validate sub.json: $(cat "$work/sub.out")"
grep -q "ok: 4 nodes, 4 GPUs" "$work/sub.out" || fail "build --nodes: $(cat "$work/sub.out")"

# islectl help names every option of every command.
"$islectl" help >"$work/help.out" || fail "islectl help"
for opt in --name --nodes --overrides --spines --type --cores --state-dir --json; do
	grep -q -- "$opt" "$work/help.out" || fail "islectl help lacks $opt"
done

if command -v dot >/dev/null; then
	echo "42 sl390lin[101-104]" >"$work/jobs"
	"$islectl" dot --jobs "$work/jobs" -o "$work/x5.svg" "$work/x5.json" || fail "dot"
	grep -q '<svg' "$work/x5.svg" || fail "dot wrote no SVG"
fi
echo "PASS: islectl build/validate/show/emit/dot on the X5 fabric"
exit 0
