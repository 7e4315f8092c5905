#!/bin/sh
# Regenerates the Go code of package wire from transport/wire/*.proto.
# Needs protoc (Debian: apt-get install protobuf-compiler) and the plugins at
# the pinned versions:
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
#   go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.0
# Usage: scripts/genproto.sh [OUTDIR]   (default: the repository root; the
# files land in OUTDIR/transport/wire/). wire's TestGeneratedUpToDate runs it into a
# temporary directory and compares.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root}
gobin=$(go env GOPATH)/bin
PATH=$gobin:$PATH
mkdir -p "$out/transport/wire"
cd "$root"
protoc -I . \
	--go_out="$out" --go_opt=module=github.com/shufflefl/shufflefl \
	--go-grpc_out="$out" --go-grpc_opt=module=github.com/shufflefl/shufflefl \
	transport/wire/*.proto
