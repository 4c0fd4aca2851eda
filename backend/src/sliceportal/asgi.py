"""ASGI entry point for uvicorn / production servers (set DATABASE_URL there).

Every worker process imports this and builds its own app; none starts anything but itself
(the controller process runs the loops and the testbed: ``sliceportal controller``)."""

from __future__ import annotations

from sliceportal.api.main import create_app
from sliceportal.core.config import get_settings
from sliceportal.core.dsn import database_url
from sliceportal.core.stack_dumps import dump_stacks_on_signal

dump_stacks_on_signal()  # kill -USR1 <worker pid>: every thread's stack in the log

app = create_app(get_settings(), database_url(start_embedded=False))
