#!/bin/sh
# Side by side: two JSON run reports (taskproof run --report json:PATH) of the same suite,
# one row per scenario, the differing verdicts marked. A Markdown table on stdout.
#
#   scripts/compare-runs.sh A.json B.json "label A" "label B" > reports/x.md
set -eu
a=$1 b=$2 la=${3:-A} lb=${4:-B}
printf '| scenario | %s | %s | same outcome |\n|---|---|---|---|\n' "$la" "$lb"
jq -r -n --slurpfile a "$a" --slurpfile b "$b" '
  def cell(s): if s == null then "(absent)" else
    s.outcome + (if s.reason then ": " + (s.reason | gsub("\\|"; "/") | gsub("\n"; " ") | .[0:110]) else "" end) end;
  ($a[0].scenarios | map({(.id): .}) | add) as $x
  | ($b[0].scenarios | map({(.id): .}) | add) as $y
  | ([$x, $y] | map(keys) | add | unique)[] as $id
  | "| \($id) | \(cell($x[$id])) | \(cell($y[$id])) | \(if $x[$id].outcome == $y[$id].outcome then "yes" else "**no**" end) |"'
printf '\n%s: %s\n\n%s: %s\n' "$la" "$(jq -c .summary "$a")" "$lb" "$(jq -c .summary "$b")"
