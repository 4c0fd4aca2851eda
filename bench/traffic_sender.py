"""The live sender's own ceiling and rate accuracy, on a veth pair in a private namespace.

    .venv/bin/python bench/traffic_sender.py      (root)

Baseline (same run): a tight loop that sends one prebuilt frame over the same AF_PACKET
socket, no stamping, no pacing — what Python + the kernel's veth path can do at all.
Ours: ``sender.send`` with rate_pps=None (its ceiling: per-packet stamping, checksum,
round robin over the scenario's flows) and at set rates (achieved / asked).
"""

from __future__ import annotations

import time

from _results import Results, quick
from traffic_common import veth_wire

from sliceportal.traffic.scenarios import table1, table3
from sliceportal.traffic.sender import open_sender, send
from sliceportal.traffic.templates import make_template

N = 50_000 if quick() else 200_000


def tight_loop(sock_send, frame: bytes, n: int) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    for _ in range(n):
        sock_send(frame)
    return n / (time.perf_counter() - start)


def main() -> None:
    with veth_wire("sender") as (ns, tx, _rx):
        sock = open_sender(tx, ns)
        print("ceiling (packets/s)")
        print(f"{'frames':<40} {'tight loop':>11} {'sender':>9} {'ratio':>6}")
        res = Results("traffic_sender")
        ceiling = res.table("sender ceiling (packets/s)", ["frames", "tight loop", "sender", "ratio"])
        for name, flows in [
            ("seed 001 Table 1, 150 B, 16 flows", table1(132)),
            ("seed 001 Table 1, 1500 B, 16 flows", table1(1500)),
            ("seed 000 Table 3, 1500 B, 512 flows", table3(1)),
        ]:
            base = tight_loop(sock.send, make_template(flows[0]).frame_at(0, 0), N)
            r = send(sock, flows, rate_pps=None, packets=N)
            rate = (r.packets - 1) / r.duration_s
            print(f"{name:<40} {base:>11.0f} {rate:>9.0f} {rate / base:>6.2f}")
            ceiling.rows.append([name, round(base), round(rate), round(rate / base, 2)])
            res.figure(
                f"sender ceiling, {name}",
                rate,
                "packets/s",
                baseline=base,
                baseline_name="tight send() loop of one frame",
            )
        print("\nrate accuracy (seed 001 Table 1, 512 B, 2 s each)")
        print(f"{'asked pps':>10} {'achieved':>10} {'ratio':>6}")
        accuracy = res.table(
            "sender rate accuracy (seed 001 Table 1, 512 B, 2 s each)", ["asked pps", "achieved pps", "ratio"]
        )
        flows = table1(512)
        for asked in (1_000, 10_000, 50_000, 100_000, 150_000):
            r = send(sock, flows, rate_pps=asked, duration_s=2.0)
            achieved = (r.packets - 1) / r.duration_s
            print(f"{asked:>10} {achieved:>10.0f} {achieved / asked:>6.3f}")
            accuracy.rows.append([asked, round(achieved), round(achieved / asked, 3)])
        sock.close()
        res.write()


if __name__ == "__main__":
    main()
