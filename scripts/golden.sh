#!/usr/bin/env bash
# golden.sh — digests of every protocol's results, to check that a refactor
# leaves simulation results bit-identical.
#
#   scripts/golden.sh [BINARY] > digests.txt
#
# For every protocol of `shufflefl protocols`, both collection paths
# (streaming, --faithful) and 1 and 2 workers, it runs a small job and prints
# the SHA-256 of metrics.jsonl with the wall-clock fields (seconds, timing)
# removed, and of the final model.json. Diff the output of two binaries:
# any difference is a change of results. Takes about 2 minutes.
set -euo pipefail
bin=${1:-bin/shufflefl}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for p in ${PROTOCOLS:-$("$bin" protocols | awk '/^[a-z]/ {print $1}')}; do
	for path in streaming faithful; do
		for w in 1 2; do
			extra=()
			[ "$path" = faithful ] && extra+=(--faithful)
			case $p in ifca*) extra+=(--clients-per-round 20) ;; esac
			out="$tmp/$p-$path-$w"
			if ! "$bin" run --protocol "$p" --clients 40 --rounds 2 --workers "$w" \
				--seed 7 --out "$out" "${extra[@]}" >"$out.log" 2>&1; then
				echo "$p $path w=$w FAILED: $(tail -1 "$out.log")"
				continue
			fi
			m=$(jq -c 'del(.seconds, .timing)' "$out/metrics.jsonl" | sha256sum | cut -c1-16)
			model=$(sha256sum <"$out/model.json" | cut -c1-16)
			echo "$p $path w=$w metrics=$m model=$model"
		done
	done
done
