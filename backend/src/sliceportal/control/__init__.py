"""The controller process: the one place in a cluster of portal processes that runs the
reconciler, the health prober and the live testbed, chosen by a lease on PostgreSQL."""
