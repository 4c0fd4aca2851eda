#!/usr/bin/env bash
# The whole test suite: lint, types, unit + integration tests (real PostgreSQL, real
# kernel XDP, RTL under a simulator, P4Runtime over gRPC) and the end-to-end UI tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export PATH="$PWD/.venv/bin:$PATH"

bash scripts/lint.sh  # ruff, format, cargo fmt + clippy, mypy, import contracts, eslint + prettier + tsc
echo "== frontend unit tests (vitest)"; (cd frontend && npm run -s test)
if (($#)); then
  echo "== pytest $*"; pytest "$@"; exit 0
fi
# Two lanes side by side on the two cores (conftest.py CPU_LANE): the tests that only compute
# beside the rest; each lane's own failures fail the run, the cpu lane's report follows.
echo "== pytest: the live lane, the cpu lane beside it"
reports=$(mktemp -d)
pytest --lane cpu -p no:cacheprovider --junitxml="$reports/cpu.xml" >"$reports/cpu.log" 2>&1 &
cpu_lane=$!
trap 'kill "$cpu_lane" 2>/dev/null || true; rm -rf "$reports"' EXIT
live_status=0
pytest --lane live --junitxml="$reports/live.xml" || live_status=$?
cpu_status=0
wait "$cpu_lane" || cpu_status=$?
echo "== pytest: the cpu lane"
cat "$reports/cpu.log"
python scripts/failures.py "$reports/live.xml" "$reports/cpu.xml"  # last, where a log's tail shows it
((live_status == 0 && cpu_status == 0)) || exit $((live_status ? live_status : cpu_status))
