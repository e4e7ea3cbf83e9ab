#!/bin/bash
# bench/fabric/table.sh FABRIC_JSON: the per-shape tables of README's
# Results (means over the seeds, the seed range in brackets; split TP
# groups summed, those split across leafs in brackets; MB per run per tier).
set -euo pipefail
f=$1
jq -r '
def mean: if length == 0 then null else (add / length) end;
def r(n): if . == null then "-" else ((. * pow(10; n) | round) / pow(10; n) | tostring) end;
.shapes[] |
"#### " + (.shape | split("/") | last | sub(".json$"; "")),
"| config | runs | jobs ok | step ms mean (seed range) | step p95 | token ms mean (range) | wait s | JCT s | makespan s | TP split (spine) | island MB | leaf MB | spine MB | CPU idle % | load |",
"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
( .results | group_by(.config) | sort_by(.[0].config as $c | ["tree","tree-switches","block","block-segment","isle","isle-shim"] | index($c)) | .[] |
  . as $g |
  "| \($g[0].config) | \($g | length) | \([$g[].jobs] | add)/\([$g[].jobs_submitted] | add) | \([$g[].step_ms_mean] | mean | r(0)) (\([$g[].step_ms_mean] | min | r(0))-\([$g[].step_ms_mean] | max | r(0))) | \([$g[].step_ms_p95] | mean | r(0)) | \([$g[].infer_token_ms_mean | select(. != null)] | mean | r(1)) (\([$g[].infer_token_ms_mean | select(. != null)] | min | r(1))-\([$g[].infer_token_ms_mean | select(. != null)] | max | r(1))) | \([$g[].wait_s_mean] | mean | r(1)) | \([$g[].jct_s_mean] | mean | r(1)) | \([$g[].makespan_s] | mean | r(1)) | \([$g[].tp_groups_split] | add) (\([$g[].tp_groups_split_spine // 0] | add)) | \([$g[].link_bytes_by_tier.island // 0] | mean / 1e6 | r(0)) | \([$g[].link_bytes_by_tier.leaf // 0] | mean / 1e6 | r(0)) | \([$g[].link_bytes_by_tier.spine // 0] | mean / 1e6 | r(0)) | \([$g[].cpu_idle_pct] | min | r(0))-\([$g[].cpu_idle_pct] | max | r(0)) | \([$g[].host_load_1m // empty] | mean | r(1)) |"
), ""' "$f"
