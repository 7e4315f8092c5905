#!/usr/bin/env bash
# Runs README.md's examples in order, as a user pasting them would, in one
# temporary directory, and compares the figures they print with README's.
#
#   scripts/readme-examples.sh            # every example but the slow ones
#   README_EXAMPLES_ALL=1 scripts/readme-examples.sh   # the frontier too
#
# An example is a line of a ```sh block that starts with `bin/shufflefl`
# (the setup line `scripts/setup.sh && bin/shufflefl run` runs setup once,
# here, then `bin/shufflefl run`). Its expected figures are those of its
# trailing comment — the first "NN.N%" is the final test accuracy, "epsilon
# E" the cumulative central epsilon, "N messages opened" the messages a
# deployment opened — or, when the block is followed by an output block, the
# accuracy, epsilon and lower bound of that block's "final test accuracy"
# line. Each must equal the figure of the last "final test accuracy" line
# the example prints, to the README's number of decimals. Examples that need
# a deployment's files (`--config run.yaml`) are listed and not run. Exit 1
# on any mismatch or failed example.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
scripts/setup.sh >/dev/null
tmp=$(mktemp -d "${TMPDIR:-/tmp}/readme-examples.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
cp bin/shufflefl "$tmp/bin/shufflefl"
ln -s "$PWD/examples" "$PWD/python" "$tmp/"  # the --trainer example's script and its module
export SHUFFLEFL_DATA="$repo/datasets"

# examples prints one record per example: the command, a tab, the expected
# figures ("acc=..;eps=..;lb=..;msgs=.."), from README.md.
examples() {
  awk '
    function figures(text,   out, m) {
      out = ""
      if (match(text, /[0-9]+(\.[0-9]+)?%/)) out = out "acc=" substr(text, RSTART, RLENGTH - 1) ";"
      if (match(text, /epsilon [0-9]+(\.[0-9]+)?/)) out = out "eps=" substr(text, RSTART + 8, RLENGTH - 8) ";"
      if (match(text, /[0-9][0-9,]* messages opened/)) { m = substr(text, RSTART, RLENGTH - 16); gsub(",", "", m); out = out "msgs=" m ";" }
      return out
    }
    function lastline(text,   out, a) {
      out = ""
      if (match(text, /final test accuracy [0-9.]+/)) out = out "acc=" substr(text, RSTART + 20, RLENGTH - 20) ";"
      if (match(text, /cumulative central epsilon [0-9.]+/)) out = out "eps=" substr(text, RSTART + 27, RLENGTH - 27) ";"
      if (match(text, /lower bound [0-9.]+/)) out = out "lb=" substr(text, RSTART + 12, RLENGTH - 12) ";"
      return out
    }
    /^```sh$/ { insh = 1; n = 0; next }
    insh && /^```$/ { insh = 0; after = 1; next }
    insh {
      line = $0
      if (line ~ /^scripts\/setup\.sh && bin\/shufflefl /) sub(/^scripts\/setup\.sh && /, "", line)
      if (line !~ /^bin\/shufflefl /) next
      cmd = line; comment = ""
      if (index(line, "#") > 0) { cmd = substr(line, 1, index(line, "#") - 1); comment = substr(line, index(line, "#") + 1) }
      sub(/[ \t]+$/, "", cmd)
      n++; cmds[n] = cmd; wants[n] = figures(comment)
      next
    }
    after && /^$/ { next }
    after && /^```$/ { inout = 1; after = 0; next }
    inout && /^```$/ { inout = 0; next }
    inout { if (n == 1 && wants[1] == "" && $0 ~ /final test accuracy/) wants[1] = lastline($0); next }
    after { after = 0; flush() ; next }
    function flush(   i) { for (i = 1; i <= n; i++) printf "%s\t%s\n", cmds[i], wants[i]; n = 0 }
    !insh && !inout && n > 0 { flush() }
    END { flush() }
  ' README.md
}

# printed figures of an example's output, in the same form.
printed() {
  local line
  line=$(grep 'final test accuracy' "$1" | tail -1 || true)
  local out=""
  [[ $line =~ final\ test\ accuracy\ ([0-9.]+) ]] && out+="acc=${BASH_REMATCH[1]};"
  [[ $line =~ cumulative\ central\ epsilon\ ([0-9.]+) ]] && out+="eps=${BASH_REMATCH[1]};"
  [[ $line =~ lower\ bound\ ([0-9.]+) ]] && out+="lb=${BASH_REMATCH[1]};"
  [[ $line =~ opened\ ([0-9]+)\ messages ]] && out+="msgs=${BASH_REMATCH[1]};"
  printf '%s' "$out"
}

# field KEY FIGURES: the value of KEY in FIGURES, or "".
field() { local f=";$2"; f=${f#*;$1=}; [ "$f" = ";$2" ] && return; printf '%s' "${f%%;*}"; }

# same WANT GOT PERCENT: GOT rounded to WANT's decimals equals WANT (GOT
# times 100 first when PERCENT is set).
same() {
  awk -v w="$1" -v g="$2" -v pct="$3" 'BEGIN {
    d = 0; if (index(w, ".")) d = length(w) - index(w, ".")
    if (pct) g = g * 100
    exit !(sprintf("%.*f", d, g) == sprintf("%.*f", d, w))
  }'
}

fail=0 ran=0
cd "$tmp"
while IFS=$'\t' read -r cmd want; do
  case "$cmd" in
  *"--config run.yaml"*) echo "not run (needs a deployment's files): $cmd"; continue ;;
  *"experiment frontier"*)
    if [ -z "${README_EXAMPLES_ALL:-}" ]; then echo "not run (slow; README_EXAMPLES_ALL=1 runs it): $cmd"; continue; fi ;;
  esac
  ran=$((ran + 1))
  echo "+ $cmd"
  # The README's command line, quoted words and all, as a shell reads it.
  rc=0
  eval "$cmd" </dev/null >"$tmp/out.txt" 2>"$tmp/err.txt" || rc=$?
  if [ $rc != 0 ]; then
    echo "FAIL: exit status $rc from: $cmd"; tail -3 "$tmp/err.txt"; fail=1; continue
  fi
  got=$(printed "$tmp/out.txt")
  for key in acc eps lb msgs; do
    w=$(field $key "$want"); [ -z "$w" ] && continue
    g=$(field $key "$got")
    pct=""; [ $key = acc ] && [[ $w != 0.* ]] && pct=1
    if [ -z "$g" ] || ! same "$w" "$g" "$pct"; then
      echo "FAIL: $cmd: README says $key $w, it printed ${g:-nothing} ($(grep 'final test accuracy' "$tmp/out.txt" | tail -1))"
      fail=1
    fi
  done
done < <(cd "$repo" && examples)
echo "readme-examples: $ran examples run$([ $fail = 0 ] && echo ", every figure as README.md states it" || echo ", MISMATCHES above")"
exit $fail
