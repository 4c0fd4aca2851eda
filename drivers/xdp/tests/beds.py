"""The XDP program attached to the veth testbed's core node, for the live tests and for
bench/xdp_veth.py (which puts this folder on its path)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sliceportal.rules.ir import RuleIR
from sliceportal_testbed import Testbed
from sliceportal_xdp.driver import Driver


def testbed_options(tb: Testbed, **options: Any) -> dict[str, Any]:
    """Driver options for the program on core's eth0: it transmits through edge's port towards
    core, forwards to the alt node with XDP_TX and polls no CPU load; ``options`` on top."""
    core, alt = tb["core"], tb["alt"]
    return {
        "interface": core.ifname,
        "netns": core.netns,
        "tx_peer": f"{tb['edge'].netns}/{tb.peer_port('core')}",
        "alt_mac": alt.mac,
        "alt_ip": alt.ip,
        "overload_poll_s": 0,
        **options,
    }


@contextmanager
def on_testbed(prefix: str, ir: RuleIR, **options: Any) -> Iterator[tuple[Testbed, Driver]]:
    """The veth testbed (``prefix``) with the program attached to core (``testbed_options``)
    and ``ir`` pushed; detached and torn down on exit."""
    with Testbed(prefix) as tb:
        d = Driver(testbed_options(tb, **options))
        try:
            d.apply(d.lower(ir), lambda _: None)
            yield tb, d
        finally:
            d.close()
