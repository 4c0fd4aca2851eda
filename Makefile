.PHONY: run test bootstrap bench bench-quick screenshots
run:        ## the portal with embedded PostgreSQL, testbed, demo data and live traffic
	bash scripts/run.sh
test:       ## the whole test suite
	bash scripts/test.sh
bootstrap:  ## install / build everything, idempotent
	bash scripts/bootstrap.sh
bench:      ## benchmarks (figures as ratios against a baseline of the same run) -> bench/results/, docs tables
	bash scripts/bootstrap.sh && bash scripts/bench_tools.sh && .venv/bin/python -m bench; status=$$?; .venv/bin/python scripts/bench_docs.py; exit $$status
bench-quick: ## the short form of every benchmark (development, a few minutes)
	bash scripts/bootstrap.sh && bash scripts/bench_tools.sh && .venv/bin/python -m bench --quick; status=$$?; .venv/bin/python scripts/bench_docs.py; exit $$status
screenshots: ## re-take the screenshots docs/ uses (the e2e run, against the real stack)
	bash scripts/bootstrap.sh && UPDATE_SCREENSHOTS=1 .venv/bin/pytest e2e
