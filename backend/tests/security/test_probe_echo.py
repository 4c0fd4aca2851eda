"""#27: a backend's health never quotes what answered at its address.

Whoever may register a backend would otherwise learn what any port of the backend networks
replies (a port scanner with a banner grabber). Each driver probes a real TCP server that
answers like a web server; the health detail says in our words that it is not the driver's
kind of data plane.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from sliceportal.services.backends import driver_class

BANNER = b"HTTP/1.1 400 Bad Request\r\nServer: secret-banner/1.0\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
ECHOES = ("HTTP/1.1", "Bad Request", "secret-banner", "400")


@pytest.fixture
def web_server() -> Iterator[int]:
    """A server that answers every connection with an HTTP 400 status line and closes it."""
    srv = socket.create_server(("127.0.0.1", 0))
    srv.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(1.0)
                try:
                    conn.recv(65536)
                    conn.sendall(BANNER)
                except OSError:
                    pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1]
    stop.set()
    t.join(5)
    srv.close()


@pytest.mark.parametrize(
    ("driver", "options", "words"),
    [
        ("netfpga", {"timeout_s": 3}, "not a NetFPGA agent"),
        ("xdp", {"agent_token": "t" * 16, "agent_timeout_s": 3}, "not an XDP agent"),
        ("p4rt", {"timeout_s": 2}, "P4Runtime"),
    ],
)
def test_health_reports_in_our_words(web_server: int, driver: str, options: dict[str, object], words: str) -> None:
    address = f"127.0.0.1:{web_server}" if driver == "p4rt" else f"tcp:127.0.0.1:{web_server}"
    drv = driver_class(driver)({"address": address, **options})
    try:
        health = drv.health()
    finally:
        drv.close()
    assert not health.ok
    assert words in health.detail, health.detail
    assert not [e for e in ECHOES if e in health.detail], health.detail
