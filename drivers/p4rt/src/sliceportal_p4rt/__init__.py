"""sliceportal driver plugin for the p4rt data plane."""
