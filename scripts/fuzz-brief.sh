#!/usr/bin/env bash
# Runs every fuzz target of the repository briefly (FUZZTIME each, default
# 5000x: a count, not a duration — a duration's deadline can end a worker
# mid-input and fail with "context deadline exceeded", a known flake of Go's
# fuzzing engine): the decoders of network messages, sealed values, keys, certificates,
# client registries, stored blobs and dataset files. Seed corpora run in
# every `go test`; this adds fresh coverage-guided inputs. A failure leaves
# the crashing input under the package's testdata/fuzz/ and exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-5000x}
n=0
while read -r file target; do
  pkg=./$(dirname "$file")
  go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" >/tmp/fuzz-$$.log 2>&1 || {
    echo "fuzz: $pkg $target failed:"; cat /tmp/fuzz-$$.log; rm -f /tmp/fuzz-$$.log; exit 1; }
  n=$((n + 1))
done < <(grep -rn --include='*_test.go' '^func Fuzz' . | sed -E 's#^\./([^:]+):[0-9]+:func (Fuzz[A-Za-z0-9_]*).*#\1 \2#' | sort)
rm -f /tmp/fuzz-$$.log
echo "fuzz: $n targets, $fuzztime each: no failure"
