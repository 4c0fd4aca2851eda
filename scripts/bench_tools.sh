#!/usr/bin/env bash
# Tools only the benchmarks need, beside the checkout in .tools/bin (made by `make bench`, not
# by the portal's or the tests' set-up): vegeta, the open-loop HTTP load generator of
# bench/api_open_loop.py (Go: a fraction of the CPU a Python client takes to offer the same
# rate on the machine the server runs on). Built with the Go toolchain from the Go module proxy.
set -euo pipefail
cd "$(dirname "$0")/.."

VEGETA=github.com/tsenart/vegeta/v12@v12.13.0
bin=.tools/bin
stamp=$bin/.vegeta-stamp
if [[ -x $bin/vegeta ]] && [[ "$(cat "$stamp" 2>/dev/null)" == "$VEGETA" ]]; then
  exit 0
fi
if ! command -v go >/dev/null; then
  echo "bench_tools: Go is not installed; bench/api_open_loop.py needs vegeta ($VEGETA): install Go, then rerun" >&2
  exit 1
fi
mkdir -p "$bin"
echo "bench_tools: building vegeta ($VEGETA) into $bin"
GOBIN="$PWD/$bin" go install "$VEGETA"
echo "$VEGETA" >"$stamp"
