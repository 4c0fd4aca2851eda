"""``sliceportal probe …``: STAMP (RFC 8762) active measurement per slice lane (docs/kpis.md).

sliceportal probe reflect --port 862
sliceportal probe send --to 10.0.0.2 --slice 3 --backend 1 --lane 0=0 --lane 2=46 \\
    --portal https://portal.example --api-key-file key.txt
sliceportal probe send --to 10.0.0.2:862 --slice 3 --backend 1 --lane 0=0 --print --duration 10
"""

from __future__ import annotations

import json
import signal
import socket
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Annotated

import httpx
import typer

from sliceportal.probe.post import Poster
from sliceportal.probe.reflector import Reflector
from sliceportal.probe.sender import LaneFlow, LaneSample, ProbeError, Sender
from sliceportal.probe.wire import STAMP_PORT

app = typer.Typer(help="Active probes (STAMP, RFC 8762; TWAMP-light compatible): reflect, or send per lane.")


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=2)


def _stop_on_signals() -> threading.Event:
    stop = threading.Event()

    def handler(_sig: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    return stop


def _target(to: str) -> tuple[str, int]:
    host, _, port = to.rpartition(":") if ":" in to else (to, "", "")
    if not port:
        port = str(STAMP_PORT)
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ProbeError(f"--to {to!r}: the port must be 1 … 65535")
    try:
        return socket.gethostbyname(host), int(port)
    except OSError as exc:
        raise ProbeError(f"--to {to!r}: {host!r} does not resolve to an IPv4 address ({exc})") from exc


@app.command()
def reflect(
    port: Annotated[int, typer.Option(help="UDP port to answer on (RFC 8762: 862)", min=1, max=65535)] = STAMP_PORT,
    bind: Annotated[str, typer.Option(help="local IPv4 address to bind")] = "0.0.0.0",
    duration: Annotated[
        float | None, typer.Option(help="stop after this many seconds (default: until SIGINT/SIGTERM)", min=0)
    ] = None,
) -> None:
    """Answer STAMP / TWAMP-light test packets (stateless Session-Reflector)."""
    try:
        reflector = Reflector(bind, port)
    except OSError as exc:
        _fail(f"--bind {bind} --port {port}: {exc.strerror or exc}")
        return
    stop = _stop_on_signals()
    if duration is not None:
        threading.Timer(duration, stop.set).start()
    typer.echo(f"reflecting on {bind}:{reflector.port}", err=True)
    try:
        reflector.serve(stop)
    finally:
        reflector.close()
    typer.echo(f"reflected {reflector.reflected} test packets, refused {reflector.refused}", err=True)


@app.command()
def send(
    to: Annotated[str, typer.Option(help="the reflector: HOST[:PORT] (port 862 by default)")],
    slice_id: Annotated[int, typer.Option("--slice", help="slice id the samples belong to", min=1)],
    backend_id: Annotated[int, typer.Option("--backend", help="backend id of the data plane the probes cross", min=1)],
    lane: Annotated[
        list[str],
        typer.Option(
            help="lane=dscp[:port], repeated: one probe flow per lane, marked with "
            "the DSCP, from this source port (default: any)"
        ),
    ],
    portal: Annotated[str | None, typer.Option(help="portal base URL: post samples to /api/v1/kpis/ingest")] = None,
    api_key_file: Annotated[
        Path | None,
        typer.Option(
            help="file holding an API key with the telemetry scope", exists=True, dir_okay=False, readable=True
        ),
    ] = None,
    print_: Annotated[
        bool, typer.Option("--print", help="print each sample as a JSON line (also without --portal)")
    ] = False,
    rate: Annotated[float, typer.Option(help="probes per second per lane")] = 10.0,
    interval: Annotated[float, typer.Option(help="seconds per sample")] = 1.0,
    timeout: Annotated[float, typer.Option(help="seconds a probe may take to return before it counts as lost")] = 1.0,
    size: Annotated[int, typer.Option(help="UDP payload octets per probe (44 … 1472)")] = 44,
    duration: Annotated[
        float | None, typer.Option(help="stop after this many seconds (default: until SIGINT/SIGTERM)", min=0)
    ] = None,
    bind: Annotated[str, typer.Option(help="local IPv4 address to send from")] = "0.0.0.0",
) -> None:
    """Probe each lane and post (or print) two-way delay, jitter and loss per lane and interval."""
    if portal is None and not print_:
        _fail("--portal (with --api-key-file) or --print: the samples must go somewhere")
    if portal is not None and api_key_file is None:
        _fail("--api-key-file: posting to the portal needs an API key with the telemetry scope")
    try:
        flows = [LaneFlow.parse(spec) for spec in lane]
        sender = Sender(_target(to), flows, bind=bind, rate_pps=rate, interval_s=interval, timeout_s=timeout, size=size)
    except ProbeError as exc:
        _fail(str(exc))
        return
    except OSError as exc:
        _fail(f"--bind {bind} / --lane ports: {exc.strerror or exc}")
        return
    client: httpx.Client | None = None
    poster: Poster | None = None
    if portal is not None and api_key_file is not None:
        key = api_key_file.read_text().strip()
        if not key:
            _fail(f"--api-key-file {api_key_file}: empty")
        client = httpx.Client(base_url=portal, timeout=10.0)
        poster = Poster(client, key, slice_id, backend_id)

    def sink(samples: list[LaneSample]) -> None:
        if print_:
            for s in samples:
                sys.stdout.write(json.dumps(s.point(slice_id, backend_id)) + "\n")
            sys.stdout.flush()
        if poster is not None:
            poster(samples)

    try:
        totals = sender.run(sink, duration_s=duration, stop=_stop_on_signals())
    finally:
        sender.close()
        if poster is not None:
            poster.close()
        if client is not None:
            client.close()
    for t in totals:
        typer.echo(f"lane {t.lane}: sent {t.sent}, returned {t.returned}, late or duplicate {t.late}", err=True)
    if poster is not None:
        typer.echo(f"posted {poster.posted} samples, {poster.failed} not stored", err=True)
        if poster.failed:
            raise typer.Exit(code=1)
