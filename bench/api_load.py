"""Bench: 50 000-subscriber CSV import, and list / create latency under concurrent load.

Run: .venv/bin/python bench/api_load.py [--rows 50000] [--clients 16] [--requests 1500]

The real stack: a private PostgreSQL, the API under uvicorn (one worker, real HTTP on
loopback), httpx clients. Baselines measured in the same run:
  * import: a bare psycopg COPY of the same rows into a scratch table (the floor any
    import into PostgreSQL pays), so the ratio is the cost of validation, duplicate checks,
    membership rows and the audit on top of raw COPY;
  * latency: GET /api/v1/health under the same concurrency (authentication-free, one
    trivial query), so the ratios are what paging / creating subscribers adds.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time

import httpx
import psycopg
from _results import Results, quick
from stack_common import stack


def csv_rows(n: int, start: int = 0) -> str:
    lines = ["imsi,ue_ip,teids,tenant,slices"]
    for i in range(start, start + n):
        lines.append(f"{1010000000000 + i:015d},10.{40 + i // 65536}.{(i // 256) % 256}.{i % 256},{i + 1},bench,bulk")
    return "\n".join(lines) + "\n"


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


async def load(base: str, headers: dict[str, str], clients: int, requests: int, make: object) -> list[float]:
    latencies: list[float] = []
    counter = iter(range(requests))

    async def worker(client: httpx.AsyncClient) -> None:
        for i in counter:
            method, url, body = make(i)  # type: ignore[operator]
            t0 = time.perf_counter()
            r = await client.request(method, url, json=body, headers=headers)
            latencies.append(time.perf_counter() - t0)
            if r.status_code >= 400:
                raise RuntimeError(f"{method} {url}: {r.status_code} {r.text[:200]}")

    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        await asyncio.gather(*(worker(client) for _ in range(clients)))
    return latencies


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=1500)
    args = ap.parse_args()
    if quick():
        args.rows, args.requests = min(args.rows, 10_000), min(args.requests, 300)
    res = Results("api_load")

    with stack() as st:
        base, headers = st.base, st.headers
        tenant = httpx.post(
            f"{base}/api/v1/tenants", headers=headers, json={"name": "bench", "vni": 4242, "ue_pool": "10.0.0.0/8"}
        ).json()
        types = httpx.get(f"{base}/api/v1/slice-types", headers=headers).json()["data"]
        httpx.post(
            f"{base}/api/v1/slices",
            headers=headers,
            json={"name": "bulk", "tenant_id": tenant["id"], "slice_type_id": types[0]["id"]},
        )

        body = csv_rows(args.rows).encode()
        t0 = time.perf_counter()
        r = httpx.post(
            f"{base}/api/v1/subscribers/import",
            headers=headers,
            timeout=600,
            files={"file": ("subs.csv", body, "text/csv")},
        )
        import_s = time.perf_counter() - t0
        assert r.status_code == 201, r.text[:500]

        with psycopg.connect(
            host=str(st.pg.sock), port=st.pg.port, user="postgres", password=st.pg.password(), dbname="bench"
        ) as conn:
            conn.execute("CREATE TEMP TABLE raw (imsi text, ue_ip inet, teids bigint[])")
            t0 = time.perf_counter()
            with conn.cursor().copy("COPY raw FROM STDIN") as copy:
                for i in range(args.rows):
                    copy.write_row(
                        (f"{1010000000000 + i:015d}", f"10.{40 + i // 65536}.{(i // 256) % 256}.{i % 256}", [i + 1])
                    )
            copy_s = time.perf_counter() - t0

        print(
            f"import of {args.rows} subscribers over HTTP: {import_s:.2f} s "
            f"({args.rows / import_s:,.0f} rows/s); raw COPY baseline {copy_s:.2f} s; "
            f"ratio {import_s / copy_s:.1f}x"
        )
        res.figure(
            f"CSV import of {args.rows} subscribers over HTTP",
            import_s,
            "s",
            baseline=copy_s,
            baseline_name="raw COPY of the same rows",
        )

        rng = random.Random(1)
        count = args.rows

        def health(_: int) -> tuple[str, str, None]:
            return "GET", "/api/v1/health", None

        def listing(_: int) -> tuple[str, str, None]:
            return "GET", f"/api/v1/subscribers?limit=50&offset={rng.randrange(count - 50)}&sort=imsi", None

        def create(i: int) -> tuple[str, str, dict[str, object]]:
            n = 10_000_000 + i
            return (
                "POST",
                "/api/v1/subscribers",
                {
                    "tenant_id": tenant["id"],
                    "imsi": f"{n:015d}",
                    "ue_ip": f"10.200.{(i // 256) % 256}.{i % 256}",
                    "teids": [n],
                },
            )

        results = {}
        for name, make in (("health (baseline)", health), ("list subscribers", listing), ("create subscriber", create)):
            lat = asyncio.run(load(base, headers, args.clients, args.requests, make))
            results[name] = (statistics.median(lat), pct(lat, 99))
        base50, base99 = results["health (baseline)"]
        print(
            f"{args.clients} concurrent clients, {args.requests} requests each kind, "
            f"{count:,}+ subscribers in the database:"
        )
        for name, (p50, p99) in results.items():
            print(
                f"  {name:18s} p50 {p50 * 1000:7.1f} ms  p99 {p99 * 1000:7.1f} ms   "
                f"(x{p50 / base50:.1f} / x{p99 / base99:.1f} of the baseline)"
            )
        table = res.table(
            f"API latency, {args.clients} concurrent clients, {count:,}+ subscribers",
            ["request", "p50 ms", "p99 ms", "p50 x health", "p99 x health"],
        )
        for name, (p50, p99) in results.items():
            table.rows.append(
                [name, round(p50 * 1e3, 1), round(p99 * 1e3, 1), round(p50 / base50, 1), round(p99 / base99, 1)]
            )
            if name != "health (baseline)":
                res.figure(
                    f"{name} p99",
                    p99 * 1e3,
                    "ms",
                    baseline=base99 * 1e3,
                    baseline_name="health p99",
                    goal="<= 50 ms",
                    met=p99 * 1e3 <= 50,
                )
    res.write()


if __name__ == "__main__":
    main()
