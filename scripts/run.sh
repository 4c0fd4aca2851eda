#!/usr/bin/env bash
# Runs the portal: embedded PostgreSQL, emulated testbed, demo data, live traffic.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/sliceportal run "$@"
