#!/usr/bin/env bash
# Writes docs/PERFORMANCE.md from the hot-path benchmarks (noise, local
# training, one simulated round with its shuffle and aggregation, the
# deployed shuffler, sealing and opening, accounting): each benchmark run
# -count times (default 3), the median of each, ratios taken within one run.
# The sections, benchmarks and ratio columns are in scripts/perftable/main.go.
#
#   scripts/perf-table.sh -count 5             # rewrite docs/PERFORMANCE.md
#   scripts/perf-table.sh -count 1 -only Seal  # one section, to stdout
#   scripts/perf-table.sh -count 5 -raw bench.txt        # keep the go test output
#   scripts/perf-table.sh -count 5 -from bench.txt       # re-render it without running
#
# With -only the table goes to stdout and docs/PERFORMANCE.md is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."
# The command line printed at the top of the document, without -raw or -from FILE.
shown=() skip=0
for a in "$@"; do
  if [ $skip = 1 ]; then skip=0; continue; fi
  case "$a" in -raw|--raw|-from|--from) skip=1; continue ;; -raw=*|--raw=*|-from=*|--from=*) continue ;; esac
  shown+=("$a")
done
cmd="scripts/perf-table.sh ${shown[*]}"
case " $* " in
*" -only "*) exec go run scripts/perftable/main.go -cmd "$cmd" "$@" ;;
esac
tmp=$(mktemp docs/.PERFORMANCE.md.XXXXXX)
trap 'rm -f "$tmp"' EXIT
go run scripts/perftable/main.go -cmd "$cmd" "$@" >"$tmp"
mv "$tmp" docs/PERFORMANCE.md
trap - EXIT
echo "perf-table: wrote docs/PERFORMANCE.md" >&2
