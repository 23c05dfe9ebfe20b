#!/usr/bin/env python3
# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""SendMessage throughput and latency from a closed loop of Python clients: the bridge
(``ovos-a2a serve``) side by side with a bare a2a-sdk server and ``ovos-persona-server
--a2a-base-url``, all on loopback, interleaved.

    python bench/bench_send.py [--seconds 10] [--concurrency 16] [--rounds 3] [--quick] [--keep]
                               [--json bench/results/bridge.json]

Every server answers with the same trivial persona (see ``benchlib``). A closed loop of N async
httpx clients POSTs JSON-RPC ``SendMessage`` (``A2A-Version: 1.0``, a fresh messageId, no
contextId) for ``--seconds`` per round, against (a) the bridge (SQLite store,
``--max-concurrent`` = N so its "busy" limit does not bite), (b) the bare a2a-sdk server
(InMemoryTaskStore, the same persona calls in a worker thread), (c) ovos-persona-server as
shipped, and, as a diagnostic, (d) the bare server of (b) on the bridge's store
(DatabaseTaskStore on SQLite, WAL, synchronous=NORMAL). Rounds alternate the order; medians
over rounds and the ratios are reported. Only COMPLETED tasks count; everything else is an
error, reported by kind. Server CPU per request (from /proc) and the CPU used by other
processes on the machine during each window are recorded. Beforehand, sequential keep-alive
GETs (card) and POSTs (SendMessage) check that no server is handicapped by the delayed-ACK
stall (~40 ms per response without TCP_NODELAY). A short extra run shows the bridge as
configured by default (``--max-concurrent 8``) under the same load.

``--quick``: 2 rounds x 3 s, fewer sequential requests, no run with the defaults.
The results are recorded under the key ``send``.
"""
from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchlib import (HEADERS, BareProcess, BridgeProcess, PersonaServerProc, add_round_arguments, bench_arguments,
                      classify, keepalive_post, machine_busy, proc_cpu, proc_status, resolve_round_arguments,
                      run_benchmark, send_body, summary)


async def closed_loop(url: str, pid: int, concurrency: int, seconds: float, warmup: float) -> dict:
    """``concurrency`` clients, each sending its next message as soon as the last is answered."""
    import httpx

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    ok_lat: list[float] = []
    errors: Counter = Counter()
    window = {"start": float("inf"), "end": float("inf")}
    stop = asyncio.Event()
    rid = 0

    async with httpx.AsyncClient(timeout=60, limits=limits, headers=HEADERS) as hc:
        async def worker() -> None:
            nonlocal rid
            while not stop.is_set():
                rid += 1
                payload = json.dumps(send_body(rid))
                t0 = time.perf_counter()
                try:
                    response = await hc.post(url, content=payload)
                    kind = classify(response.status_code, response.json())
                except Exception as exc:  # any failure is counted by kind, the loop goes on
                    kind = f"exception {type(exc).__name__}"
                t1 = time.perf_counter()
                if window["start"] <= t0 and t1 <= window["end"]:
                    if kind is None:
                        ok_lat.append(t1 - t0)
                    else:
                        errors[kind] += 1

        workers = [asyncio.create_task(worker()) for _ in range(concurrency)]
        await asyncio.sleep(warmup)
        cpu0, own0, all0 = proc_cpu(pid), time.process_time(), machine_busy()
        window["start"] = time.perf_counter()
        await asyncio.sleep(seconds)
        window["end"] = time.perf_counter()
        cpu1, own1, all1 = proc_cpu(pid), time.process_time(), machine_busy()
        stop.set()
        await asyncio.wait_for(asyncio.gather(*workers, return_exceptions=True), 90)
    elapsed = window["end"] - window["start"]
    ok = len(ok_lat)
    res = {"rps": round(ok / elapsed, 2), "ok": ok, "errors": sum(errors.values()),
           "error_kinds": dict(errors.most_common(5)), "latency": summary(ok_lat),
           "server_cpu_s": round(cpu1 - cpu0, 3), "loadgen_cpu_s": round(own1 - own0, 3),
           "other_cpu_s": round((all1 - all0) - (cpu1 - cpu0) - (own1 - own0), 3),
           "window_s": round(elapsed, 3)}
    res["server_cpu_ms_per_ok"] = round((cpu1 - cpu0) * 1000 / ok, 3) if ok else None
    return res


async def keepalive_get(url: str, n: int) -> dict:
    """Sequential GETs on one keep-alive connection: a few ms unless delayed ACKs stall them."""
    import httpx
    lat = []
    async with httpx.AsyncClient(timeout=10, limits=httpx.Limits(max_connections=1)) as hc:
        for i in range(n + 10):
            t0 = time.perf_counter()
            r = await hc.get(url)
            r.raise_for_status()
            if i >= 10:
                lat.append(time.perf_counter() - t0)
    out = summary(lat)
    out["stalled"] = out["p50_ms"] > 20  # ~40 ms per request is the no-TCP_NODELAY signature
    return out


def bench_send(args, workdir: Path, persona: Path) -> dict:
    """The servers side by side: the stall check, then ``args.rounds`` closed-loop rounds each, the
    order alternating; medians, ratios, and a short run of the bridge with its defaults."""
    print(f"\n== SendMessage throughput: {args.concurrency} clients, {args.rounds} rounds x {args.seconds:g} s",
          flush=True)
    servers = [
        BridgeProcess(workdir, "bridge", ["--persona", str(persona), "--state-dir", str(workdir / "state-send"),
                                          "--max-concurrent", str(max(args.concurrency, 8))]),
        BareProcess(workdir, "bare_sdk", persona),
        PersonaServerProc(workdir, "persona_server", persona),
        # diagnostic: the bare server on the bridge's store (DatabaseTaskStore on SQLite, same pragmas)
        BareProcess(workdir, "bare_sdk_sqlite", persona, db=str(workdir / "bare-sqlite" / "tasks.sqlite3")),
    ]
    (workdir / "bare-sqlite").mkdir(exist_ok=True)
    result: dict = {"concurrency": args.concurrency, "seconds": args.seconds, "rounds": args.rounds,
                    "bridge_flags": servers[0].flags, "servers": {}}
    try:
        with ThreadPoolExecutor(len(servers)) as pool:  # started side by side; each is stopped in finally
            for future in [pool.submit(s.start) for s in servers]:
                future.result()
        for s in servers:
            print(f"  started {s.label:15s} pid {s.pid} in {s.startup_s:5.1f} s  {s.rpc_url}", flush=True)
        for s in servers:
            entry = result["servers"][s.label] = {"rpc_url": s.rpc_url, "startup_s": round(s.startup_s, 2)}
            entry["keepalive_get_card"] = asyncio.run(keepalive_get(s.card_url, 100 if args.quick else 300))
            entry["sequential_send"] = asyncio.run(keepalive_post(s.rpc_url, 30 if args.quick else 100))
            entry["rss_kib_idle"] = proc_status(s.pid).get("VmRSS")
            flag = "  <-- STALLED (no TCP_NODELAY?)" if entry["keepalive_get_card"]["stalled"] else ""
            print(f"  {s.label:15s} keep-alive GET card p50 {entry['keepalive_get_card']['p50_ms']:6.2f} ms, "
                  f"sequential SendMessage p50 {entry['sequential_send']['p50_ms']:6.2f} ms{flag}", flush=True)
            entry["rounds"] = []
        for r in range(args.rounds):
            order = servers if r % 2 == 0 else servers[::-1]
            for s in order:
                res = asyncio.run(closed_loop(s.rpc_url, s.pid, args.concurrency, args.seconds, args.warmup))
                res["round"] = r
                result["servers"][s.label]["rounds"].append(res)
                print(f"  round {r} {s.label:15s} {res['rps']:8.1f} req/s  p50 {res['latency'].get('p50_ms', 0):7.2f}"
                      f"  p99 {res['latency'].get('p99_ms', 0):7.2f} ms  errors {res['errors']}"
                      f"  server CPU {res['server_cpu_ms_per_ok'] or 0:.2f} ms/req"
                      f"  (other load {res['other_cpu_s']:.1f} CPU s)", flush=True)
        for s in servers:
            entry = result["servers"][s.label]
            rounds = entry["rounds"]
            entry["median"] = {
                "rps": statistics.median(x["rps"] for x in rounds),
                "p50_ms": statistics.median(x["latency"].get("p50_ms", float("nan")) for x in rounds),
                "p99_ms": statistics.median(x["latency"].get("p99_ms", float("nan")) for x in rounds),
                "errors_total": sum(x["errors"] for x in rounds),
                "server_cpu_ms_per_ok": statistics.median((x["server_cpu_ms_per_ok"] or float("nan"))
                                                          for x in rounds),
            }
            entry["rss_kib_after"] = proc_status(s.pid).get("VmRSS")
            entry["log"] = s.log_findings()
    finally:
        for s in servers:
            s.stop()
    med = {k: v["median"] for k, v in result["servers"].items()}
    result["ratio_bridge_over_persona_server"] = round(med["bridge"]["rps"] / med["persona_server"]["rps"], 3)
    result["ratio_bridge_over_bare_sdk"] = round(med["bridge"]["rps"] / med["bare_sdk"]["rps"], 3)
    result["ratio_bridge_over_bare_sdk_sqlite"] = round(med["bridge"]["rps"] / med["bare_sdk_sqlite"]["rps"], 3)
    result["targets"] = {"bridge/persona_server >= 1.5": result["ratio_bridge_over_persona_server"] >= 1.5,
                         "bridge/bare_sdk >= 0.8": result["ratio_bridge_over_bare_sdk"] >= 0.8}

    # the same load on the bridge as configured by default (--max-concurrent 8)
    if args.quick:
        return result
    with BridgeProcess(workdir, "bridge_defaults", ["--persona", str(persona), "--state-dir",
                                                    str(workdir / "state-defaults")]) as s:
        seconds = min(args.seconds, 3.0)
        res = asyncio.run(closed_loop(s.rpc_url, s.pid, args.concurrency, seconds, args.warmup))
        res["log"] = s.log_findings()
    result["bridge_default_max_concurrent"] = res
    print(f"  bridge, default --max-concurrent 8: {res['rps']:.1f} completed/s, {res['errors']} errors "
          f"{res['error_kinds']}", flush=True)
    return result


def print_send(send: dict) -> None:
    """The medians per server and the ratios, as a table."""
    print(f"SendMessage, {send['concurrency']} clients, median of {send['rounds']} rounds x {send['seconds']:g} s")
    print(f"  {'server':16s}{'req/s':>9s}{'p50 ms':>9s}{'p99 ms':>9s}{'errors':>8s}{'CPU ms/req':>12s}"
          f"{'GET p50':>9s}{'seq p50':>9s}")
    for label, e in send["servers"].items():
        m = e["median"]
        print(f"  {label:16s}{m['rps']:9.1f}{m['p50_ms']:9.2f}{m['p99_ms']:9.2f}{m['errors_total']:8d}"
              f"{m['server_cpu_ms_per_ok']:12.2f}{e['keepalive_get_card']['p50_ms']:9.2f}"
              f"{e['sequential_send']['p50_ms']:9.2f}")
    print(f"  bridge / persona-server = {send['ratio_bridge_over_persona_server']:.2f} (target >= 1.5)   "
          f"bridge / bare SDK = {send['ratio_bridge_over_bare_sdk']:.2f} (target >= 0.8)   "
          f"bridge / bare SDK on SQLite = {send['ratio_bridge_over_bare_sdk_sqlite']:.2f}")
    d = send.get("bridge_default_max_concurrent")
    if d:
        print(f"  bridge with default --max-concurrent 8: {d['rps']:.1f} completed/s, errors {d['errors']} "
              f"{d['error_kinds']}")


def main() -> None:
    parser = bench_arguments(__doc__, "2 rounds x 3 s")
    add_round_arguments(parser)
    args = parser.parse_args()
    resolve_round_arguments(args)
    args.warmup = 1.0
    run_benchmark("send", args, bench_send, print_send)


if __name__ == "__main__":
    main()
