"""The emulated testbed: network namespaces edge / core / alt joined by veth pairs.

Generic on purpose (no data-plane specifics): data planes attach to ``core``'s
interface, traffic generators send from ``edge``, and ``alt`` is the alternative node
of seed 001. See ``netns_testbed`` for the topology.
"""

from sliceportal.traffic.netns import entered as in_netns

from .netns_testbed import LinkStats, Node, Testbed, TestbedError, cleanup

__all__ = ["LinkStats", "Node", "Testbed", "TestbedError", "cleanup", "in_netns"]
