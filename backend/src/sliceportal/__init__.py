"""sliceportal: QoS-aware network slicing portal for programmable data planes."""

__version__ = "0.1.0"
