#!/usr/bin/env bash
# The whole test suite: lint, types, unit + integration tests (real PostgreSQL, real
# kernel XDP, RTL under a simulator, P4Runtime over gRPC) and the end-to-end UI tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export PATH="$PWD/.venv/bin:$PATH"

echo "== ruff"; ruff check .
echo "== mypy"; mypy backend/src drivers/*/src testbed/src
# the architecture's import rules, named one by one (docs/architecture.md; also run by pytest)
echo "== import contracts"; lint-imports --config backend/tests/layers/contracts.ini --no-cache --no-logo
echo "== frontend lint + types"; (cd frontend && npm run -s lint)
echo "== frontend unit tests (vitest)"; (cd frontend && npm run -s test)
echo "== pytest"; pytest "$@"
