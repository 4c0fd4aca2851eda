"""Every thread's stack on SIGUSR1, written to the process's stderr (the portal's log).

What a stuck request or control loop waits on, asked of a running portal with nothing else
installed: ``kill -USR1 <pid>`` of a uvicorn worker or of the controller. faulthandler writes
from its C signal handler, so a thread holding the interpreter lock in a long call does not
delay the dump.
"""

from __future__ import annotations

import faulthandler
import signal
import sys

SIGNAL = signal.SIGUSR1


def dump_stacks_on_signal() -> None:
    faulthandler.register(SIGNAL, file=sys.stderr, all_threads=True, chain=False)
