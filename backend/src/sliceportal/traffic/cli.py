"""``sliceportal traffic …``: generate scenarios to pcap, send them live, measure them.

sliceportal traffic pcap out.pcap --scenario table3 --slices 4 --rate 100000 --packets 200000
sliceportal traffic send tx0 --netns edge --scenario table1 --size 512 --rate 50000 --duration 5
sliceportal traffic measure --pcap out.pcap --scenario table3 --slices 4 --sent out.sent.json
sliceportal traffic measure --iface rx0 --netns core --duration 6 --scenario table3 --slices 4
"""

from __future__ import annotations

import ipaddress
import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from sliceportal.traffic import capture, scenarios
from sliceportal.traffic.meter import Meter, MeterReport
from sliceportal.traffic.netns import NetnsError
from sliceportal.traffic.packets import Underlay
from sliceportal.traffic.pcapgen import SentReport, write_pcap
from sliceportal.traffic.profiles import Bursts, ConstantRate, Profile, ProfileError
from sliceportal.traffic.scenarios import ScenarioError, ScenarioFlow

app = typer.Typer(help="Traffic of the papers' scenarios: to pcap, onto an interface, and measured.")


class Scenario(StrEnum):
    TABLE3 = "table3"  # seed 000 Table 3
    TABLE1 = "table1"  # seed 001 Table 1


ScenarioOpt = Annotated[Scenario, typer.Option(help="table3: seed 000 Table 3; table1: seed 001 Table 1")]
SlicesOpt = Annotated[int, typer.Option(help="table3: slices (1, 2, 4, 8, 16)")]
UsersOpt = Annotated[int, typer.Option(help="table3: users per slice")]
SizeOpt = Annotated[int, typer.Option(help="frame size in bytes (table1: 1500 … 132)")]
LanesOpt = Annotated[int, typer.Option(help="lanes of the backend results are folded onto (8, 4, 2, 1)")]
_U = scenarios.DEFAULT_UNDERLAY
SrcMacOpt = Annotated[str, typer.Option(help="outer source MAC (the sending node)")]
DstMacOpt = Annotated[str, typer.Option(help="outer destination MAC (the data plane's port)")]
OuterSrcOpt = Annotated[str, typer.Option(help="outer source IPv4 (VXLAN tunnel)")]
OuterDstOpt = Annotated[str, typer.Option(help="outer destination IPv4 (VXLAN tunnel)")]


def _underlay(src_mac: str, dst_mac: str, outer_src: str, outer_dst: str) -> Underlay:
    """The outer addresses, validated: a typo must not become a frame nobody receives."""
    for mac in (src_mac, dst_mac):
        parts = mac.split(":")
        if len(parts) != 6 or not all(len(p) == 2 and all(c in "0123456789abcdefABCDEF" for c in p) for p in parts):
            raise ScenarioError(f"not a MAC address: {mac!r}")
    for ip in (outer_src, outer_dst):
        try:
            ipaddress.IPv4Address(ip)
        except ValueError as exc:
            raise ScenarioError(f"not an IPv4 address: {ip!r}") from exc
    return Underlay(src_mac=src_mac, dst_mac=dst_mac, outer_src=outer_src, outer_dst=outer_dst)


def _flows(scenario: Scenario, slices: int, users: int, size: int) -> list[ScenarioFlow]:
    if scenario is Scenario.TABLE3:
        return scenarios.table3(slices, users, size)
    return scenarios.table1(size)


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=2)


def _dump(model: SentReport | MeterReport, out: Path | None) -> None:
    text = model.model_dump_json(indent=2)
    if out is None:
        sys.stdout.write(text + "\n")
    else:
        out.write_text(text + "\n")


def _print_line(report: MeterReport) -> None:
    sys.stdout.write(report.model_dump_json() + "\n")
    sys.stdout.flush()


@app.command()
def pcap(
    out: Annotated[Path, typer.Argument(help="pcap file to write (nanosecond timestamps)")],
    scenario: ScenarioOpt = Scenario.TABLE3,
    slices: SlicesOpt = 1,
    users: UsersOpt = scenarios.USERS_PER_SLICE,
    size: SizeOpt = scenarios.TABLE3_FRAME_SIZE,
    rate: Annotated[float, typer.Option(help="average packets/s of the schedule")] = 100_000.0,
    packets: Annotated[int | None, typer.Option(help="stop after this many packets")] = None,
    duration: Annotated[float | None, typer.Option(help="stop after this many seconds of schedule")] = None,
    burst: Annotated[int, typer.Option(help="packets per burst (1: constant rate)")] = 1,
    peak_rate: Annotated[float | None, typer.Option(help="packets/s inside a burst")] = None,
    sent_json: Annotated[Path | None, typer.Option(help="write per-flow sent counts here")] = None,
    src_mac: SrcMacOpt = _U.src_mac,
    dst_mac: DstMacOpt = _U.dst_mac,
    outer_src: OuterSrcOpt = _U.outer_src,
    outer_dst: OuterDstOpt = _U.outer_dst,
) -> None:
    """Write a scenario to a pcap; each record's time is its scheduled send time."""
    try:
        flows = _flows(scenario, slices, users, size)
        profile: Profile = (
            ConstantRate(rate) if burst <= 1 else Bursts(rate, burst, peak_rate if peak_rate else rate * 10)
        )
        if packets is None and duration is None:
            packets = len(flows) * 10
        underlay = _underlay(src_mac, dst_mac, outer_src, outer_dst)
        report = write_pcap(out, flows, profile, packets=packets, duration_s=duration, underlay=underlay)
    except (ScenarioError, ProfileError, OSError) as exc:
        _fail(str(exc))
        return
    _dump(report, sent_json)
    typer.echo(f"wrote {report.packets} packets of {len(flows)} flows to {out}", err=True)


@app.command()
def send(
    iface: Annotated[str, typer.Argument(help="interface to send on")],
    netns: Annotated[str | None, typer.Option(help="network namespace of the interface")] = None,
    scenario: ScenarioOpt = Scenario.TABLE3,
    slices: SlicesOpt = 1,
    users: UsersOpt = scenarios.USERS_PER_SLICE,
    size: SizeOpt = scenarios.TABLE3_FRAME_SIZE,
    rate: Annotated[float | None, typer.Option(help="packets/s (omit: as fast as possible)")] = None,
    packets: Annotated[int | None, typer.Option(help="stop after this many packets")] = None,
    duration: Annotated[float | None, typer.Option(help="stop after this many seconds")] = None,
    sent_json: Annotated[Path | None, typer.Option(help="write the send report here")] = None,
    burst: Annotated[int, typer.Option(help="packets per burst (1: paced by a token bucket)")] = 1,
    peak_rate: Annotated[float | None, typer.Option(help="packets/s inside a burst")] = None,
    src_mac: SrcMacOpt = _U.src_mac,
    dst_mac: DstMacOpt = _U.dst_mac,
    outer_src: OuterSrcOpt = _U.outer_src,
    outer_dst: OuterDstOpt = _U.outer_dst,
) -> None:
    """Send a scenario live onto an interface at a set rate (needs CAP_NET_RAW)."""
    from sliceportal.traffic.sender import SendError, open_sender, send_profile
    from sliceportal.traffic.sender import send as send_flows

    if packets is None and duration is None:
        duration = 1.0
    try:
        flows = _flows(scenario, slices, users, size)
        underlay = _underlay(src_mac, dst_mac, outer_src, outer_dst)
        with open_sender(iface, netns) as sock:
            if burst > 1:
                if rate is None:
                    raise ScenarioError("bursts need --rate (the average packets/s)")
                profile = Bursts(rate, burst, peak_rate if peak_rate else rate * 10)
                report = send_profile(sock, flows, profile, packets=packets, duration_s=duration, underlay=underlay)
            else:
                report = send_flows(sock, flows, rate_pps=rate, packets=packets, duration_s=duration, underlay=underlay)
    except (ScenarioError, ProfileError, SendError, NetnsError) as exc:
        _fail(str(exc))
        return
    _dump(report, sent_json)
    typer.echo(f"sent {report.packets} packets at {report.packets / max(report.duration_s, 1e-9):.0f} pps", err=True)


@app.command()
def measure(
    pcap_file: Annotated[Path | None, typer.Option("--pcap", help="read this capture")] = None,
    iface: Annotated[str | None, typer.Option(help="capture live on this interface")] = None,
    netns: Annotated[str | None, typer.Option(help="network namespace of the interface")] = None,
    duration: Annotated[float, typer.Option(help="live: capture this many seconds")] = 5.0,
    idle: Annotated[float | None, typer.Option(help="live: stop after this many idle seconds")] = None,
    scenario: ScenarioOpt = Scenario.TABLE3,
    slices: SlicesOpt = 1,
    users: UsersOpt = scenarios.USERS_PER_SLICE,
    size: SizeOpt = scenarios.TABLE3_FRAME_SIZE,
    lanes: LanesOpt = 8,
    sent: Annotated[Path | None, typer.Option(help="sender report (JSON) with per-flow counts")] = None,
    out: Annotated[Path | None, typer.Option(help="write the JSON report here (default stdout)")] = None,
    interval: Annotated[
        float | None, typer.Option(help="live: also print one JSON line per interval of this many seconds")
    ] = None,
) -> None:
    """Measure loss, delay, jitter and reordering per flow, slice and lane (JSON report).

    With ``--interval``, each interval's report is printed to stdout as one JSON line as it
    closes (a KPI collector reads them from a pipe); the final report then covers only the
    last, partial interval.
    """
    if (pcap_file is None) == (iface is None):
        _fail("give exactly one of --pcap or --iface")
        return
    if lanes not in (1, 2, 4, 8):
        _fail(f"--lanes must be 1, 2, 4 or 8, got {lanes}")
        return
    if interval is not None and (iface is None or not interval > 0):
        _fail("--interval needs --iface and a value > 0")
        return
    captured = capture.CaptureStats()
    try:
        flows = _flows(scenario, slices, users, size)
        places = {sf.flow_id: (sf.slice_index, sf.lane(lanes)) for sf in flows}
        counts = SentReport.model_validate(json.loads(sent.read_text())).sent if sent else None
        meter = Meter(places, counts)
        if pcap_file is not None:
            capture.measure_pcap(pcap_file, meter)
        elif iface is not None:
            with capture.open_capture(iface, netns) as sock:
                # scripts wait for this line before they start sending
                typer.echo(f"capturing on {iface}", err=True)
                captured = capture.run_capture(
                    sock,
                    meter,
                    duration_s=duration,
                    idle_s=idle,
                    interval_s=interval,
                    on_interval=_print_line if interval is not None else None,
                )
    except (ScenarioError, capture.CaptureError, NetnsError, ValidationError, ValueError, OSError) as exc:
        _fail(str(exc))
        return
    report = meter.report()
    if iface is not None:
        report.capture_drops = captured.socket_drops
    _dump(report, out)
