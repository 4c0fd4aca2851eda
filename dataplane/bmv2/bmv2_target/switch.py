"""The switch: the engine running p4c's JSON + traffic manager + packet I/O, under one lock.

Packets carry their own clock (pcap timestamps, or the receive time on a live port), so
rates and delays do not depend on how fast Python runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import grpc
from scapy.utils import PcapWriter, RawPcapReader

from .engine import COMPILED_JSON, Engine, Gate
from .errors import P4RTError
from .p4info_index import P4InfoIndex
from .pipeline import InFlight
from .state import Externs
from .tables import TableStore
from .traffic_manager import TrafficManager


@dataclass
class SwitchConfig:
    priority_queues: int = 1  # BMv2's default: no priority queues
    queue_depth: int = 64
    link_bps: int | None = None


@dataclass
class Output:
    port: int
    time_ns: int
    data: bytes


class SwitchLock:
    """The switch's lock (reentrant): whoever holds it sees and changes the pipeline and its
    tables as one. Holding it also closes the gate of the native live data path (live.rs),
    which runs packets without the GIL: a batch of P4Runtime writes applied under this lock
    is seen by forwarding entirely or not at all, as when Python forwarded under the lock."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth = 0
        self.gate = Gate()

    def __enter__(self) -> SwitchLock:
        self._lock.acquire()
        self._depth += 1
        if self._depth == 1:
            self.gate.close()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.gate.open()
        self._lock.release()


@dataclass
class Switch:
    config: SwitchConfig
    lock: SwitchLock = field(default_factory=SwitchLock)
    index: P4InfoIndex | None = None
    tables: TableStore | None = None
    ext: Externs | None = None
    pipeline: Engine | None = None
    processed: int = 0
    on_load: list[Callable[[Engine], None]] = field(default_factory=list)  # told of each new pipeline

    def load(self, index: P4InfoIndex, device_config: bytes = b"") -> None:
        """A new forwarding pipeline: the BMv2 JSON the controller sent (p4c's build in
        compiled/ when it sent none) with its P4Info; all state starts empty, as on BMv2."""
        try:
            text = device_config.decode() if device_config else COMPILED_JSON.read_text()
            engine = Engine(text)
        except (UnicodeDecodeError, ValueError) as e:
            raise P4RTError(grpc.StatusCode.INVALID_ARGUMENT, f"device config refused: {e}") from None
        tables = TableStore(index, engine)  # raises before anything is replaced
        ext = Externs(index, engine)
        with self.lock:
            self.index, self.tables, self.ext, self.pipeline = index, tables, ext, engine
            for listener in self.on_load:
                listener(engine)

    def run(self, packets: Iterable[tuple[int, int, bytes]]) -> list[Output]:
        """Process (time ns, ingress port, frame) in time order; outputs in departure order."""
        out: list[Output] = []

        def deliver(dequeued: int, t: int, port: int, f: InFlight) -> None:
            assert self.pipeline is not None
            data = self.pipeline.egress(f, dequeued // 1000)
            if data is not None:
                out.append(Output(port, t, data))

        with self.lock:
            if self.pipeline is None:
                raise RuntimeError("no forwarding pipeline config set")
            tm = TrafficManager(self.config.priority_queues, self.config.queue_depth, self.config.link_bps, deliver)
            for t_ns, port, data in packets:
                if self.config.link_bps is not None:
                    tm.advance(t_ns)
                f = self.pipeline.ingress(data, port, t_ns // 1000)
                self.processed += 1
                if f is not None:
                    tm.enqueue(t_ns, f)
            tm.flush()
        out.sort(key=lambda o: o.time_ns)
        return out

    def run_pcaps(self, inputs: dict[int, Path], out_dir: Path) -> dict[int, int]:
        """Replay pcaps (port -> file) merged by timestamp; write port<N>.pcap per egress
        port with departure timestamps. Returns packets written per port."""
        packets: list[tuple[int, int, bytes]] = []
        for port, path in inputs.items():
            with RawPcapReader(str(path)) as reader:
                # nanosecond pcaps (our generator writes them) carry ns in the usec field
                scale = 1 if getattr(reader, "nano", False) else 1000
                for data, meta in reader:
                    packets.append((meta.sec * 1_000_000_000 + meta.usec * scale, port, data))
        packets.sort(key=lambda p: p[0])
        outputs = self.run(packets)
        out_dir.mkdir(parents=True, exist_ok=True)
        writers: dict[int, PcapWriter] = {}
        counts: dict[int, int] = {}
        try:
            for o in outputs:
                w = writers.get(o.port)
                if w is None:
                    w = writers[o.port] = PcapWriter(
                        str(out_dir / f"port{o.port}.pcap"), linktype=1, sync=False, nano=True
                    )
                    w.write_header(None)
                sec, ns = divmod(o.time_ns, 1_000_000_000)
                w.write_packet(o.data, sec=sec, usec=ns)  # nano=True: the field holds ns
                counts[o.port] = counts.get(o.port, 0) + 1
        finally:
            for w in writers.values():
                w.close()
        return counts
