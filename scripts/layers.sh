#!/usr/bin/env bash
# Layer check: every package of the module imports only packages of its own
# layer or of a lower one (docs/ARCHITECTURE.md, "Layers"), and none of the
# arrows the table below forbids outright. It reads each package's imports
# with `go list` (non-test files; with --tests, its test files' too) and
# exits 1 listing every offending arrow, 2 if a package is in no layer.
#
#   bash scripts/layers.sh           # the packages' own imports (CI)
#   bash scripts/layers.sh --tests   # and their tests' imports (advisory)
set -euo pipefail
cd "$(dirname "$0")/.."

fields='{{join .Imports " "}}'
if [ "${1:-}" = "--tests" ]; then
  fields='{{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}'
fi

mod=$(go list -m)

# Layers, lowest first: a package is in the layer of the first pattern its
# path (relative to the module) matches; "x/..." matches x and below it.
layers='
0 checks
0 internal/...
1 privacy/...
1 learning/...
2 protocol
3 role
3 role/...
4 transport/...
5 driver/round
6 driver/sim
6 driver/sim/...
7 driver/rundir
8 driver/deploy
8 driver/deploy/...
9 research/...
10 cmd/...
10 docs/...
'

# Arrows forbidden although they point down: "from to" (patterns as above).
forbidden='
driver/sim transport/...
driver/sim driver/remote/...
driver/deploy driver/sim/...
'

if ! list=$(go list -f "{{.ImportPath}} $fields" ./...); then
  echo "layers: go list failed" >&2
  exit 2
fi
printf '%s\n' "$list" | awk -v mod="$mod/" -v layers="$layers" -v forbidden="$forbidden" '
function match_(p, pat,   base) {
  if (pat ~ /\/\.\.\.$/) { base = substr(pat, 1, length(pat) - 4); return p == base || index(p, base "/") == 1 }
  return p == pat
}
function layer(p,   i) {
  for (i = 1; i <= nl; i++) if (match_(p, lpat[i])) return lnum[i]
  return -1
}
BEGIN {
  n = split(layers, L, "\n"); nl = 0
  for (i = 1; i <= n; i++) if (split(L[i], f, " ") == 2) { nl++; lnum[nl] = f[1] + 0; lpat[nl] = f[2] }
  n = split(forbidden, F, "\n"); nf = 0
  for (i = 1; i <= n; i++) if (split(F[i], f, " ") == 2) { nf++; ffrom[nf] = f[1]; fto[nf] = f[2] }
  bad = 0; unknown = 0
}
{
  if (index($1, mod) != 1) next
  from = substr($1, length(mod) + 1)
  lf = layer(from)
  if (lf < 0) { printf "layers: package %s is in no layer (add it to scripts/layers.sh)\n", from; unknown = 1; next }
  delete seen
  for (j = 2; j <= NF; j++) {
    if (index($j, mod) != 1 || seen[$j]++) continue
    to = substr($j, length(mod) + 1)
    if (to == from) continue
    lt = layer(to)
    if (lt < 0) { printf "layers: package %s is in no layer (add it to scripts/layers.sh)\n", to; unknown = 1; continue }
    if (lt > lf) { printf "layers: %s (layer %d) -> %s (layer %d): imports a higher layer\n", from, lf, to, lt; bad = 1 }
    for (k = 1; k <= nf; k++)
      if (match_(from, ffrom[k]) && match_(to, fto[k])) { printf "layers: %s -> %s: forbidden arrow (%s -> %s)\n", from, to, ffrom[k], fto[k]; bad = 1 }
  }
}
END {
  if (bad) exit 1
  if (unknown) exit 2
}
' && echo "layers: ok"
