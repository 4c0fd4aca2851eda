#!/usr/bin/env bash
# The static checks, each by name: `scripts/lint.sh` runs all of them (scripts/test.sh, so CI),
# `scripts/lint.sh ruff mypy` some (the pre-commit hooks, .pre-commit-config.yaml). One list,
# so the hooks and `make test` cannot drift apart. Tools come from the workspace (.venv,
# frontend/node_modules, cargo): pre-commit and CI run the same pinned versions.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
ALL=(ruff format engine mypy imports frontend)

run() {
  case "$1" in
    ruff) echo "== ruff"; ruff check . ;;
    format) echo "== format"; ruff format --check . ;;
    engine) echo "== engine: cargo fmt + clippy"; make -s -C dataplane/bmv2 engine-lint ;;
    mypy) echo "== mypy"; mypy backend/src drivers/*/src testbed/src ;;
    # the architecture's import rules, named one by one (docs/architecture.md; also run by pytest)
    imports) echo "== import contracts"; lint-imports --config backend/tests/layers/contracts.ini --no-cache --no-logo ;;
    frontend) echo "== frontend: eslint + prettier + tsc"; (cd frontend && npm run -s lint) ;;
    *) echo "unknown check '$1'; the checks: ${ALL[*]}" >&2; return 2 ;;
  esac
}

if (($#)); then
  for check in "$@"; do run "$check"; done
  exit 0
fi
# all: the frontend's (node, ~25 s) on the second core while the Python and Rust checks run
frontend_log=$(mktemp)
trap 'rm -f "$frontend_log"' EXIT
run frontend >"$frontend_log" 2>&1 &
frontend_lint=$!
for check in "${ALL[@]}"; do
  [[ $check == frontend ]] || run "$check"
done
status=0
wait "$frontend_lint" || status=$?
cat "$frontend_log"
exit "$status"
