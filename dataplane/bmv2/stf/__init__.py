"""p4c's STF conformance corpus (../shared/p4-stf) against the bundled target's engine."""
