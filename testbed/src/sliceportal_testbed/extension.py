"""The testbed as the product's controller extension (entry point ``sliceportal.controller_extensions``).

The leading controller finds this through the package's entry point, never by importing it
(``sliceportal.control.extensions``): it creates the live testbed when it leads and the
setting ``testbed`` is on, and drives it through ``ControllerExtension``.
"""

from __future__ import annotations

from sliceportal.control.extensions import ControllerExtension, ExtensionContext
from sliceportal_testbed.live import LiveTestbed


def create(context: ExtensionContext) -> ControllerExtension:
    settings = context.settings
    return LiveTestbed(
        context.sessions,
        context.hub,
        prefix=settings.testbed_prefix,
        rate_pps=settings.testbed_rate_pps,
        p4_target=settings.testbed_p4_target,
    )
