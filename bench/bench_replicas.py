"""SendMessage throughput and latency: 1 and 2 bridge replicas on PostgreSQL, and 1 on SQLite.

    python bench/bench_replicas.py --db postgresql+asyncpg://USER:PASSWORD@HOST/DB [--seconds 10] [--concurrency 16]
    python bench/bench_replicas.py --db postgresql+asyncpg://… --wrk     # wrk as the load (apt-get install wrk)

Each setup runs bridges with the echo backend (``--max-concurrent`` above the load, so
"busy" does not bite); a closed loop of N async httpx clients POSTs JSON-RPC ``SendMessage``
(a fresh messageId each) for ``--seconds``, spread over the replicas in turn (no sticky
routing: request k goes to replica k mod R). Only COMPLETED tasks count. Prints req/s, p50
and p99 per setup and the ratios to one SQLite process. On a machine with fewer cores than
replicas the replicas share them, and the database runs on the same machine.

With ``--wrk`` the load is wrk (C; 2 threads, N connections, one URL), which takes far less
CPU from the servers than Python clients; the two replicas are then the two workers of one
``serve --workers 2`` (two replicas behind the kernel's spreading of connections), and
SQLite is measured with one process and with two workers too. Each setup's CPU per completed
request is recorded beside its req/s (``cpu_ms_per_request``, medians of the rounds): the bridge
processes', the PostgreSQL backends serving them, and the PostgreSQL server's shared processes
(``benchlib.CpuAccount``), so that a regression shows as a number.
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from benchlib import BridgeProcess, write_json, wrk_rounds


def echo_bridge(workdir: Path, name: str, db: str | None, workers: int = 1) -> BridgeProcess:
    """A bridge named ``name`` (its log in ``workdir``) with the echo backend, on SQLite in a
    state directory of its own or on ``db``, as a replica of a fresh name; not yet started."""
    replica = f"bench-{uuid.uuid4().hex[:6]}"
    state = workdir / f"state-{replica}"
    state.mkdir()
    flags = ["--backend", "echo", "--max-concurrent", "256", "--state-dir", str(state), "--workers", str(workers),
             *(["--db", db] if db else [])]
    return BridgeProcess(workdir, name, flags, env={"OVOS_A2A_REPLICA": replica})


async def load(urls: list[str], seconds: float, concurrency: int) -> dict:
    turn = itertools.count()
    latencies: list[float] = []
    errors = 0
    stop = time.monotonic() + seconds

    async def client(http: httpx.AsyncClient) -> None:
        nonlocal errors
        while time.monotonic() < stop:
            url = urls[next(turn) % len(urls)]
            body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
                "role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": [{"text": "hello"}]}}}
            started = time.perf_counter()
            reply = (await http.post(url, json=body, headers={"A2A-Version": "1.0"})).json()
            task = reply.get("result", {}).get("task", {})
            if task.get("status", {}).get("state") == "TASK_STATE_COMPLETED":
                latencies.append(time.perf_counter() - started)
            else:
                errors += 1

    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=concurrency)) as http:
        await asyncio.gather(*(client(http) for _ in range(concurrency)))
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000 if latencies else 0.0
    return {"rps": len(latencies) / seconds, "p50": pick(0.5), "p99": pick(0.99), "errors": errors}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="a PostgreSQL URL (postgresql+asyncpg://…)")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--json", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                                       "replicas.json"), help="where the figures are written")
    parser.add_argument("--wrk", action="store_true", help="wrk as the load; two replicas are two workers")
    options = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench_replicas_"))
    try:
        if options.wrk:
            main_wrk(options, workdir)
        else:
            main_python_clients(options, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main_python_clients(options, workdir: Path) -> None:
    """Each setup in turn, the closed loop of :func:`load` spread over its replicas."""
    results = {}
    for label, db, replicas in (("sqlite x1", None, 1), ("postgresql x1", options.db, 1),
                                ("postgresql x2", options.db, 2)):
        bridges = [echo_bridge(workdir, f"{label} #{n}", db) for n in range(replicas)]
        try:
            urls = [bridge.start().rpc_url for bridge in bridges]
            asyncio.run(load(urls, 2, options.concurrency))  # warm up
            results[label] = result = asyncio.run(load(urls, options.seconds, options.concurrency))
        finally:
            for bridge in bridges:
                bridge.stop()
        print(f"{label:15} {result['rps']:8.1f} req/s  p50 {result['p50']:7.1f} ms  p99 {result['p99']:7.1f} ms  "
              f"errors {result['errors']}", flush=True)
    base = results["sqlite x1"]["rps"]
    print("throughput relative to one SQLite process: " +
          ", ".join(f"{label} {r['rps'] / base:.2f}" for label, r in results.items()))
    write_json(options.json, {"command": "python bench/bench_replicas.py --db postgresql+asyncpg://… "
                                         f"--seconds {options.seconds:g} --concurrency {options.concurrency}",
                              "results": results,
                              "relative_to_sqlite_x1": {k: r["rps"] / base for k, r in results.items()}})


def main_wrk(options, workdir: Path) -> None:
    """All setups started, then wrk against each one's URL, ``--seconds`` per round, 3 rounds
    with the order alternating (:func:`benchlib.wrk_rounds`); medians."""
    setups = (("sqlite x1", None, 1), ("sqlite 2 workers", None, 2), ("postgresql x1", options.db, 1),
              ("postgresql 2 workers", options.db, 2))
    bridges = [echo_bridge(workdir, label, db, workers) for label, db, workers in setups]
    try:
        for bridge in bridges:  # one at a time: those on one database would create its tables together
            bridge.start()
        measured = wrk_rounds(bridges, workdir, options.concurrency, options.seconds, 3, False, [])
    finally:
        for bridge in bridges:
            bridge.stop()
    results = {label: {"rps": entry["median_rps"], "p50": statistics.median(x["p50_ms"] for x in entry["rounds"]),
                       "p99": entry["median_p99_ms"], "cpu_ms_per_request": entry["median_cpu_ms_per_ok"],
                       "rounds": entry["rounds"]}
               for label, entry in measured["servers"].items()}
    base = results["sqlite x1"]["rps"]
    print("median throughput relative to one SQLite process: " +
          ", ".join(f"{label} {r['rps'] / base:.2f}" for label, r in results.items()))
    target = options.json.replace(".json", "-wrk.json") if options.json.endswith(".json") else options.json
    write_json(target, {"command": "python bench/bench_replicas.py --db postgresql+asyncpg://… --wrk "
                                   f"--seconds {options.seconds:g} --concurrency {options.concurrency}",
                        "results": results, "relative_to_sqlite_x1": {k: r["rps"] / base for k, r in results.items()}})


if __name__ == "__main__":
    main()
