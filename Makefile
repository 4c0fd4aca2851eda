.PHONY: run test bootstrap bench
run:        ## the portal with embedded PostgreSQL, testbed, demo data and live traffic
	bash scripts/run.sh
test:       ## the whole test suite
	bash scripts/test.sh
bootstrap:  ## install / build everything, idempotent
	bash scripts/bootstrap.sh
bench:      ## benchmarks (figures as ratios against a baseline of the same run)
	bash scripts/bootstrap.sh && .venv/bin/python -m bench
