"""sliceportal driver plugin for the netfpga data plane."""
