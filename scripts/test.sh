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
echo "== pytest"; pytest "$@"
