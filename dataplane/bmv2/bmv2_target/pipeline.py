"""What travels from ingress through the traffic manager to egress: the engine's packet
(its header vector, ``egress_port``, ``priority``, ``length`` and the arriving ``data``).
The pipeline itself is p4c's JSON, executed by the engine (bmv2_target/engine.py)."""

from __future__ import annotations

from .engine import Packet as InFlight

__all__ = ["InFlight"]
