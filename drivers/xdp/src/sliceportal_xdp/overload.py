"""CPU overload detection from real signals (seed 001 §6: mpstat and softnet_stat).

A CPU counts as overloaded over a sampling period when it was busy (not idle / iowait)
for at least ``busy`` of the period, when its softnet backlog dropped packets or ran
out of budget (time_squeeze) during it, or when the cpumap could not queue frames for
it (counted by the data plane's xdp_cpumap_enqueue tracepoint program) — the symptoms
of a CPU that can no longer take what the steering sends it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CpuSample:
    busy: int  # jiffies
    total: int
    dropped: int
    squeezed: int


def parse_proc_stat(text: str) -> dict[int, tuple[int, int]]:
    """cpu -> (busy jiffies, total jiffies) from /proc/stat."""
    out = {}
    for line in text.splitlines():
        head, _, rest = line.partition(" ")
        if not head.startswith("cpu") or head == "cpu":
            continue
        vals = [int(x) for x in rest.split()]
        idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
        total = sum(vals[:8])
        out[int(head[3:])] = (total - idle, total)
    return out


def parse_softnet(text: str) -> dict[int, tuple[int, int]]:
    """cpu -> (dropped, time_squeeze) from /proc/net/softnet_stat (hex columns)."""
    out = {}
    for i, line in enumerate(text.splitlines()):
        cols = line.split()
        if len(cols) < 3:
            continue
        # column 13 (kernels >= 5.10) holds the CPU id; older kernels list rows by order
        cpu = int(cols[12], 16) if len(cols) > 12 else i
        out[cpu] = (int(cols[1], 16), int(cols[2], 16))
    return out


def sample(stat_text: str, softnet_text: str) -> dict[int, CpuSample]:
    st, sn = parse_proc_stat(stat_text), parse_softnet(softnet_text)
    return {cpu: CpuSample(b, t, *sn.get(cpu, (0, 0))) for cpu, (b, t) in st.items()}


def overloaded(
    before: dict[int, CpuSample],
    after: dict[int, CpuSample],
    busy: float,
    cpumap_before: dict[int, int] | None = None,
    cpumap_after: dict[int, int] | None = None,
) -> set[int]:
    hot = {cpu for cpu, n in (cpumap_after or {}).items() if n > (cpumap_before or {}).get(cpu, 0)}
    for cpu, a in after.items():
        b = before.get(cpu)
        if b is None:
            continue
        dt = a.total - b.total
        if dt > 0 and (a.busy - b.busy) / dt >= busy:
            hot.add(cpu)
        if a.dropped > b.dropped or a.squeezed > b.squeezed:
            hot.add(cpu)
    return hot


def read_sample() -> dict[int, CpuSample]:
    with open("/proc/stat") as f1, open("/proc/net/softnet_stat") as f2:
        return sample(f1.read(), f2.read())
