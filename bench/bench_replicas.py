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
SQLite is measured with one process and with two workers too.
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

READY = re.compile(r'serving ".*" at (\S+) ')


def start_bridge(db: str | None, name: str, workers: int = 1) -> tuple[subprocess.Popen, str]:
    state = tempfile.mkdtemp(prefix="bench_replicas_")
    args = [sys.executable, "-m", "ovos_a2a_solver.bridge", "--backend", "echo", "--port", "0",
            "--max-concurrent", "256", "--state-dir", state, "--workers", str(workers)] + (["--db", db] if db else [])
    log = open(os.path.join(state, "stdout"), "w+")
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.DEVNULL, env={**os.environ, "OVOS_A2A_REPLICA": name})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        log.seek(0)
        match = READY.search(log.read())
        if match:
            return proc, match.group(1).rstrip("/") + "/"
        if proc.poll() is not None:
            raise SystemExit(f"the bridge exited with {proc.returncode}")
        time.sleep(0.1)
    raise SystemExit("the bridge did not start within 60 s")


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
    if options.wrk:
        return main_wrk(options)
    results = {}
    for label, db, replicas in (("sqlite x1", None, 1), ("postgresql x1", options.db, 1),
                                ("postgresql x2", options.db, 2)):
        bridges = [start_bridge(db, f"bench-{n}-{uuid.uuid4().hex[:6]}") for n in range(replicas)]
        try:
            asyncio.run(load([url for _, url in bridges], 2, options.concurrency))  # warm up
            results[label] = result = asyncio.run(load([url for _, url in bridges], options.seconds,
                                                       options.concurrency))
        finally:
            for proc, _ in bridges:
                proc.terminate()
                proc.wait(30)
        print(f"{label:15} {result['rps']:8.1f} req/s  p50 {result['p50']:7.1f} ms  p99 {result['p99']:7.1f} ms  "
              f"errors {result['errors']}", flush=True)
    base = results["sqlite x1"]["rps"]
    print("throughput relative to one SQLite process: " +
          ", ".join(f"{label} {r['rps'] / base:.2f}" for label, r in results.items()))
    with open(options.json, "w") as out:
        json.dump({"command": "python bench/bench_replicas.py --db postgresql+asyncpg://… "
                              f"--seconds {options.seconds:g} --concurrency {options.concurrency}",
                   "results": results, "relative_to_sqlite_x1": {k: r["rps"] / base for k, r in results.items()}},
                  out, indent=2)
        out.write("\n")


def main_wrk(options) -> None:
    """Each setup in turn, wrk against its one URL, ``--seconds`` per round, 3 rounds with the
    order alternating; medians."""
    from bench_bridge import wrk_round  # this directory is on sys.path when run as a script

    setups = (("sqlite x1", None, 1), ("sqlite 2 workers", None, 2), ("postgresql x1", options.db, 1),
              ("postgresql 2 workers", options.db, 2))
    bridges = {label: start_bridge(db, f"bench-{uuid.uuid4().hex[:6]}", workers) for label, db, workers in setups}
    rounds: dict[str, list[dict]] = {label: [] for label in bridges}
    workdir = tempfile.mkdtemp(prefix="bench_replicas_wrk_")
    try:
        for r in range(3):
            for label in (list(bridges) if r % 2 == 0 else list(bridges)[::-1]):
                proc, url = bridges[label]
                result = wrk_round(url, proc.pid, options.concurrency, options.seconds, Path(workdir), pin=False)
                rounds[label].append(result)
                print(f"round {r} {label:22} {result['rps']:8.1f} req/s  p50 {result['p50_ms']:7.1f} ms  "
                      f"p99 {result['p99_ms']:7.1f} ms  errors {result['bad']}", flush=True)
    finally:
        for proc, _ in bridges.values():
            proc.terminate()
            proc.wait(30)
    results = {label: {"rps": statistics.median(x["rps"] for x in each),
                       "p50": statistics.median(x["p50_ms"] for x in each),
                       "p99": statistics.median(x["p99_ms"] for x in each), "rounds": each}
               for label, each in rounds.items()}
    base = results["sqlite x1"]["rps"]
    print("median throughput relative to one SQLite process: " +
          ", ".join(f"{label} {r['rps'] / base:.2f}" for label, r in results.items()))
    target = options.json.replace(".json", "-wrk.json") if options.json.endswith(".json") else options.json
    with open(target, "w") as out:
        json.dump({"command": "python bench/bench_replicas.py --db postgresql+asyncpg://… --wrk "
                              f"--seconds {options.seconds:g} --concurrency {options.concurrency}",
                   "results": results, "relative_to_sqlite_x1": {k: r["rps"] / base for k, r in results.items()}},
                  out, indent=2)
        out.write("\n")


if __name__ == "__main__":
    main()
