#!/usr/bin/env bash
# The whole test suite: lint, types, unit + integration tests (real PostgreSQL, real
# kernel XDP, RTL under a simulator, P4Runtime over gRPC) and the end-to-end UI tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export PATH="$PWD/.venv/bin:$PATH"

# the frontend's lint and types on the second core while the Python checks run (~25 s of CI)
frontend_log=$(mktemp)
trap 'rm -f "$frontend_log"' EXIT
(cd frontend && npm run -s lint) >"$frontend_log" 2>&1 &
frontend_lint=$!
echo "== ruff"; ruff check .
echo "== format"; ruff format --check .
echo "== engine: cargo fmt + clippy"; make -s -C dataplane/bmv2 engine-lint
echo "== mypy"; mypy backend/src drivers/*/src testbed/src
# the architecture's import rules, named one by one (docs/architecture.md; also run by pytest)
echo "== import contracts"; lint-imports --config backend/tests/layers/contracts.ini --no-cache --no-logo
echo "== frontend lint + types"
status=0
wait "$frontend_lint" || status=$?
cat "$frontend_log"
((status == 0)) || exit "$status"
echo "== frontend unit tests (vitest)"; (cd frontend && npm run -s test)
if (($#)); then
  echo "== pytest $*"; pytest "$@"; exit 0
fi
# Two lanes side by side on the two cores (conftest.py CPU_LANE): the tests that only compute
# beside the rest; each lane's own failures fail the run, the cpu lane's report follows.
echo "== pytest: the live lane, the cpu lane beside it"
cpu_log=$(mktemp)
pytest --lane cpu -p no:cacheprovider >"$cpu_log" 2>&1 &
cpu_lane=$!
trap 'kill "$cpu_lane" 2>/dev/null || true; rm -f "$frontend_log" "$cpu_log"' EXIT
live_status=0
pytest --lane live || live_status=$?
cpu_status=0
wait "$cpu_lane" || cpu_status=$?
echo "== pytest: the cpu lane"
cat "$cpu_log"
((live_status == 0 && cpu_status == 0)) || exit $((live_status ? live_status : cpu_status))
