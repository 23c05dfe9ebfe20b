"""SendMessage throughput and latency: 1 and 2 bridge replicas on PostgreSQL, and 1 on SQLite.

    python bench/bench_replicas.py --db postgresql+asyncpg://USER:PASSWORD@HOST/DB [--seconds 10] [--concurrency 16]

Each setup runs bridges with the echo backend (``--max-concurrent`` above the load, so
"busy" does not bite); a closed loop of N async httpx clients POSTs JSON-RPC ``SendMessage``
(a fresh messageId each) for ``--seconds``, spread over the replicas in turn (no sticky
routing: request k goes to replica k mod R). Only COMPLETED tasks count. Prints req/s, p50
and p99 per setup and the ratios to one SQLite process. On a machine with fewer cores than
replicas the replicas share them, and the database runs on the same machine.
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid

import httpx

READY = re.compile(r'serving ".*" at (\S+) ')


def start_bridge(db: str | None, name: str) -> tuple[subprocess.Popen, str]:
    state = tempfile.mkdtemp(prefix="bench_replicas_")
    args = [sys.executable, "-m", "ovos_a2a_solver.bridge", "--backend", "echo", "--port", "0",
            "--max-concurrent", "256", "--state-dir", state] + (["--db", db] if db else [])
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
    options = parser.parse_args()
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


if __name__ == "__main__":
    main()
