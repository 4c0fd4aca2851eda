"""sliceportal driver plugin for the xdp data plane."""
