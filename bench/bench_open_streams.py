#!/usr/bin/env python3
# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Many open SSE streams: 500 and 2,000 concurrent ``SendStreamingMessage`` streams that each
stay open for a while, and what they cost, on the bridge and on a bare a2a-sdk agent in turn.

    python bench/bench_open_streams.py [--streams 500,2000] [--tuned-bare] [--quick] [--keep]
                                       [--json bench/results/bridge-streams.json]

The bridge runs ``--backend echo --heartbeat 1 --max-concurrent N`` (at least 1000); each
stream asks ``sleep:15``. The bare a2a-sdk agent (``benchlib.py _bare-server --echo``, its spans
off as the bridge runs the SDK) answers the same way: accepted, then 15 s on a thread of its own
per turn (as a blocking persona's turn runs on the bridge) with a status update every second,
then the answer. For each number of streams, the bridge and the bare agent in turn (each started
fresh). Measured: RSS and threads idle and at peak (sampled from /proc), time to the first
event, heartbeat punctuality (gaps between successive heartbeat updates minus 1 s, by the
server's own timestamps and by arrival here) and the delay from a heartbeat's timestamp to its
arrival; the bridge's /health is probed meanwhile. Bounded: 120 s per run. Two rounds, the order
alternating (``--rounds``); the ratios bridge / bare of the medians of the rounds' time to the
first event (p50, p99), memory per stream, peak memory and threads are recorded, and the medians
of the ratios within a round (its runs follow each other: the machine's drift between rounds
falls out). ``--tuned-bare``: also a bare agent with its garbage collector tuned as the bridge
tunes its own (start-up's objects frozen, the young collected every 10,000 allocations), and the
ratios to it.

Every stream is a connection and a few file descriptors in this process and in the server's:
the open-file limit is raised to its hard limit first (the servers inherit it). The bridge's own
limits that 2,000 streams need: ``--max-concurrent`` at least the number of streams (each is a
message in progress), and ``--max-connections`` (by default half the open-file limit) above it.

``--quick``: 100 streams of ``sleep:4``. The results are recorded under the key ``streams``.
"""
from __future__ import annotations

import asyncio
import json
import resource
import statistics
import time
import uuid
from collections import Counter
from datetime import datetime
from pathlib import Path

from benchlib import (COMPLETED, HEADERS, BareProcess, BridgeProcess, ServerProcess, bench_arguments, keepalive_post,
                      pause_unless_stopped, pct, proc_cpu, proc_status, run_benchmark, sample_process, summary,
                      within_rounds)


def _iso(ts: str) -> float:
    """Seconds since the epoch of an ISO 8601 timestamp."""
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


async def one_stream(hc, url: str, i: int, text: str) -> dict:
    """One ``SendStreamingMessage`` of ``text``: every event with its arrival times, or the error."""
    body = {"jsonrpc": "2.0", "id": i, "method": "SendStreamingMessage",
            "params": {"message": {"role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": [{"text": text}]}}}
    t0 = time.perf_counter()
    events: list[tuple[float, float, dict]] = []
    out = {"error": None, "events": events, "t0": t0}
    try:
        async with hc.stream("POST", url, content=json.dumps(body),
                             headers={"Accept": "text/event-stream"}) as response:
            if response.status_code != 200:
                out["error"] = f"http {response.status_code}"
                return out
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    events.append((time.perf_counter(), time.time(), json.loads(line[5:])))
    except Exception as exc:  # counted and reported
        out["error"] = f"exception {type(exc).__name__}: {exc}"[:120]
    out["t_end"] = time.perf_counter()
    return out


def analyse_stream(s: dict, heartbeat: float) -> dict:
    """Heartbeat gaps (server timestamps and arrival times), first event delay, final state."""
    a = {"error": s["error"], "final": None, "first_event_s": None, "duration_s": None,
         "gaps_server": [], "gaps_arrival": [], "heartbeats": 0, "first_hb_late_s": None, "labels": [],
         "hb_delivery_lag": []}
    if s["events"]:
        a["first_event_s"] = s["events"][0][0] - s["t0"]
        a["duration_s"] = s["events"][-1][0] - s["t0"]
    prev = None  # the previous event, if it was a heartbeat: (arrival, server ts)
    accepted_ts = None
    for arrival, wall, ev in s["events"]:
        if "error" in ev:
            a["error"] = a["error"] or f"rpc {ev['error'].get('code')}: {ev['error'].get('message')}"[:120]
            continue
        result = ev.get("result", {})
        update = result.get("statusUpdate")
        task = result.get("task")
        status = (update or task or {}).get("status", {})
        if status.get("state"):
            a["final"] = status["state"]
        text = " ".join(p.get("text", "") for p in status.get("message", {}).get("parts", []))
        if update and "heartbeat" in (update.get("metadata") or {}):
            ts = _iso(status["timestamp"])
            a["heartbeats"] += 1
            a["hb_delivery_lag"].append(wall - ts)  # stamped by the bridge -> arrived here
            a["labels"].append(update["metadata"].get("note", ""))
            if prev is not None:
                a["gaps_arrival"].append(arrival - prev[0] - heartbeat)
                a["gaps_server"].append(ts - prev[1] - heartbeat)
            elif accepted_ts is not None:
                a["first_hb_late_s"] = ts - accepted_ts - heartbeat
            prev = (arrival, ts)
        else:
            accepted = text or (update.get("metadata") or {}).get("note", "") if update else ""
            if accepted.startswith("Message accepted") and status.get("timestamp"):
                accepted_ts = _iso(status["timestamp"])
            prev = None
    return a


async def probe_health(url: str | None, stop: asyncio.Event, lat: list, running: list, period: float = 0.25) -> None:
    """The bridge's /health (a SQLite SELECT 1) while the streams are open: event-loop lag, and
    how many persona turns it says are running (nothing without a ``url``: the bare agent has none)."""
    import httpx
    if url is None:
        return
    async with httpx.AsyncClient(timeout=30) as hc:
        while not stop.is_set():
            t0 = time.perf_counter()
            try:
                response = await hc.get(url)
                response.raise_for_status()
                lat.append(time.perf_counter() - t0)
                running.append(response.json().get("running", 0))
            except Exception:  # a failed probe is recorded as a very late one
                lat.append(30.0)
            await pause_unless_stopped(stop, period)


async def run_streams(server: ServerProcess, n: int, text: str, heartbeat: float, timeout: float) -> dict:
    """``n`` streams at once on ``server`` (at most ``timeout`` s), its /proc sampled and /health
    probed meanwhile."""
    import httpx

    limits = httpx.Limits(max_connections=n + 16, max_keepalive_connections=n + 16)
    timeouts = httpx.Timeout(connect=60, read=60, write=60, pool=60)
    samples: list = []
    health: list = []
    running: list = []
    stop = asyncio.Event()
    sampler = asyncio.create_task(sample_process(server.pid, stop, samples))
    health_url = server.base.rsplit("/a2a", 1)[0] + "/health" if isinstance(server, BridgeProcess) else None
    prober = asyncio.create_task(probe_health(health_url, stop, health, running))
    cpu0 = proc_cpu(server.pid)
    t0 = time.perf_counter()
    async with httpx.AsyncClient(timeout=timeouts, limits=limits, headers=HEADERS) as hc:
        jobs = [asyncio.create_task(one_stream(hc, server.rpc_url, i, text)) for i in range(n)]
        done, pending = await asyncio.wait(jobs, timeout=timeout)
        for job in pending:
            job.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
    wall = time.perf_counter() - t0
    cpu = proc_cpu(server.pid) - cpu0
    stop.set()
    await asyncio.gather(sampler, prober)
    streams = [j.result() for j in done]
    return {"streams": streams, "timed_out": len(pending), "samples": samples, "health": health,
            "running_max": max(running, default=0), "wall_s": wall, "server_cpu_s": cpu}


def raise_open_file_limit() -> dict:
    """The soft open-file limit raised to the hard one (for this process and the servers it
    starts); both, as they are then."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return {"soft": soft, "hard": hard}


def bench_streams(args, workdir: Path, persona: Path) -> dict:
    """For each number of streams, the bridge and the bare agent in turn (each fresh) with that many
    streams at once; the ratios of the bridge's figures to the bare agent's."""
    limit = raise_open_file_limit()
    print(f"open-file limit {limit['soft']}", flush=True)
    out: dict = {"open_file_limit": limit, "by_streams": {}}
    for n in args.streams:
        if 2 * n + 100 > limit["soft"]:
            print(f"  WARNING: {n} streams need more than the open-file limit of {limit['soft']} allows", flush=True)
        runs: dict = {"bridge": [], "bare_sdk": []}
        if args.tuned_bare:
            runs[TUNED] = []
        bridge_flags = ["--backend", "echo", "--heartbeat", "1", "--max-concurrent", str(max(n, 1000))]
        for r in range(args.rounds):  # bridge, bare(s); then the other way round; ...
            servers = [BridgeProcess(workdir, f"bridge_streams_{n}_{r}",
                                     [*bridge_flags, "--state-dir", str(workdir / f"state-streams-{n}-{r}")]),
                       BareProcess(workdir, f"bare_streams_{n}_{r}", persona, echo=True, traced=False, heartbeat=1.0)]
            if args.tuned_bare:
                tuned = BareProcess(workdir, f"bare_tuned_streams_{n}_{r}", persona, echo=True, traced=False,
                                    heartbeat=1.0, tuned_gc=True)
                tuned.label = TUNED
                servers.append(tuned)
            for server in (servers if r % 2 == 0 else servers[::-1]):
                runs[server.label].append(measure_streams(args, server, n))
        figures = (("first_event_p50", lambda x: x["first_event"]["p50_ms"]),
                   ("first_event_p99", lambda x: x["first_event"]["p99_ms"]),
                   ("rss_kib_per_stream", lambda x: x["rss_kib_per_stream"]),
                   ("rss_peak", lambda x: x["rss_kib"]["peak_sampled"]),
                   ("threads_peak", lambda x: x["threads"]["peak"]))
        for bare, suffix in (("bare_sdk", "bare"), (TUNED, "bare_tuned_gc")):
            if bare not in runs:
                continue
            runs[f"ratio_bridge_over_{suffix}"] = ratio = {
                key: _ratio(statistics.median(pick(x) for x in runs["bridge"]),
                            statistics.median(pick(x) for x in runs[bare])) for key, pick in figures}
            # the runs of a round follow each other: the machine's drift between rounds falls out
            runs["ratios_within_rounds" + ("" if bare == "bare_sdk" else "_over_" + suffix)] = within = {
                key: within_rounds([pick(x) for x in runs["bridge"]], [pick(x) for x in runs[bare]])
                for key, pick in figures[:3]}
            print(f"  {n} streams, bridge / {bare} (medians of {args.rounds} rounds): {ratio}; medians of the "
                  f"ratios within a round: { {k: v and v['median'] for k, v in within.items()} }", flush=True)
        out["by_streams"][str(n)] = runs
    return out


#: the label of the bare agent with its garbage collector tuned as the bridge's (``--tuned-bare``)
TUNED = "bare_sdk_tuned_gc"


def _ratio(a, b) -> float | None:
    return round(a / b, 3) if a and b else None


def measure_streams(args, server: ServerProcess, n: int) -> dict:
    """``n`` streams at once on ``server`` (started here, stopped after), sampled and probed while
    they run; the distributions of their timings."""
    text, hb = args.stream_text, 1.0
    print(f"\n== {n} concurrent open streams on {server.label} (echo, heartbeat 1 s, {text!r})", flush=True)
    with server as s:
        asyncio.run(keepalive_post(s.rpc_url, 20))  # warm: imports, SQLite, first turns
        time.sleep(0.5)
        idle = proc_status(s.pid)
        raw = asyncio.run(run_streams(s, n, text, hb, args.stream_timeout))
        after = proc_status(s.pid)
        log = s.log_findings()
    flags = getattr(server, "flags", None)
    analysed = [analyse_stream(x, hb) for x in raw["streams"]]
    finals = Counter(a["final"] for a in analysed)
    errors = Counter(a["error"] for a in analysed if a["error"])
    gaps_server = [g for a in analysed for g in a["gaps_server"]]
    gaps_arrival = [g for a in analysed for g in a["gaps_arrival"]]
    lag = [g for a in analysed for g in a["hb_delivery_lag"]]
    first_late = [a["first_hb_late_s"] for a in analysed if a["first_hb_late_s"] is not None]
    first_event = [a["first_event_s"] for a in analysed if a["first_event_s"] is not None]
    durations = [a["duration_s"] for a in analysed if a["duration_s"] is not None]
    peak_rss = max((x.get("VmRSS", 0) for x in raw["samples"]), default=0)
    peak_threads = max((x.get("Threads", 0) for x in raw["samples"]), default=0)
    open_count = sum(1 for a in analysed if a["final"] == COMPLETED)
    # streams open at once: between a stream's first event and its end, as the client saw them
    edges = sorted([(x["events"][0][0], 1) for x in raw["streams"] if x["events"]] +
                   [(x.get("t_end", float("inf")), -1) for x in raw["streams"] if x["events"]])
    level = peak_open = 0
    for _t, step in edges:
        level += step
        peak_open = max(peak_open, level)

    def dist(values: list[float]) -> dict:
        v = sorted(values)
        return {"n": len(v), "p50_ms": round(pct(v, 50) * 1000, 2), "p99_ms": round(pct(v, 99) * 1000, 2),
                "max_ms": round(v[-1] * 1000, 2) if v else None, "min_ms": round(v[0] * 1000, 2) if v else None}

    result = {
        "streams": n, "text": text, "heartbeat_s": hb, "server": server.label, "bridge_flags": flags,
        "completed": open_count, "peak_open_at_once": peak_open, "bridge_running_turns_max": raw["running_max"],
        "final_states": dict(finals), "errors": dict(errors.most_common(5)),
        "timed_out": raw["timed_out"], "wall_s": round(raw["wall_s"], 2),
        "rss_kib": {"idle": idle.get("VmRSS"), "peak_sampled": peak_rss, "hwm": after.get("VmHWM"),
                    "after": after.get("VmRSS")},
        "rss_kib_per_stream": round((peak_rss - (idle.get("VmRSS") or 0)) / n, 1) if n else None,
        "threads": {"idle": idle.get("Threads"), "peak": peak_threads, "after": after.get("Threads")},
        "server_cpu_s": round(raw["server_cpu_s"], 2),
        "first_event": dist(first_event),
        "all_open_after_s": round(max(first_event), 3) if first_event else None,
        "stream_duration": dist(durations),
        "heartbeats_per_stream": dict(Counter(a["heartbeats"] for a in analysed).most_common(6)),
        "heartbeat_gap_minus_1s_server_ts": dist(gaps_server),
        "heartbeat_gap_minus_1s_arrival": dist(gaps_arrival),
        "first_heartbeat_late_server_ts": dist(first_late),
        "heartbeat_delivery_lag": dist(lag),
        "health_probe_during": summary(raw["health"]),
        "log": log,
    }
    hg = result["heartbeat_gap_minus_1s_server_ts"]
    print(f"  completed {open_count}/{n}, errors {dict(errors)}, timed out {raw['timed_out']}, "
          f"wall {raw['wall_s']:.1f} s, open at once: {peak_open} (/health running max "
          f"{raw['running_max']})", flush=True)
    print(f"  RSS idle {(idle.get('VmRSS') or 0) / 1024:.1f} MiB, peak {peak_rss / 1024:.1f} MiB "
          f"({result['rss_kib_per_stream']} KiB/stream), threads peak {peak_threads}", flush=True)
    ha = result["heartbeat_gap_minus_1s_arrival"]
    print(f"  first event p50 {result['first_event']['p50_ms']} ms p99 {result['first_event']['p99_ms']} ms; "
          f"heartbeat gap - 1 s: by server timestamp p50 {hg['p50_ms']} p99 {hg['p99_ms']} ms, by arrival p50 "
          f"{ha['p50_ms']} p99 {ha['p99_ms']} ms; stamped->arrived p50 {result['heartbeat_delivery_lag']['p50_ms']}"
          f" ms", flush=True)
    return result


def print_streams(out: dict) -> None:
    """Each run's streams, memory, threads and timing distributions, and the ratios."""
    for n, runs in out["by_streams"].items():
        for label, rounds in runs.items():
            if label.startswith("ratio"):
                print(f"  {n} streams, {label}: {rounds}")
            else:
                for st in rounds:
                    print_run(st)


def print_run(st: dict) -> None:
    """One run's streams, memory, threads and timing distributions, as a table."""
    print(f"{st['server']}: {st['streams']} open streams ({st['text']!r}, heartbeat {st['heartbeat_s']:g} s): completed "
          f"{st['completed']}, errors {sum(st['errors'].values())}, timed out {st['timed_out']}, "
          f"open at once {st['peak_open_at_once']}, wall {st['wall_s']} s")
    print(f"  RSS idle {st['rss_kib']['idle'] / 1024:.1f} MiB -> peak {st['rss_kib']['peak_sampled'] / 1024:.1f} "
          f"MiB ({st['rss_kib_per_stream']} KiB/stream); threads {st['threads']['idle']} -> "
          f"{st['threads']['peak']}")
    for key, name in (("first_event", "first event"), ("heartbeat_gap_minus_1s_server_ts", "hb gap-1s (server)"),
                      ("heartbeat_gap_minus_1s_arrival", "hb gap-1s (arrival)"),
                      ("first_heartbeat_late_server_ts", "1st hb late (server)"),
                      ("heartbeat_delivery_lag", "hb stamped->arrived"), ("stream_duration", "stream duration")):
        v = st[key]
        print(f"  {name:22s} p50 {v['p50_ms']:9.2f}  p99 {v['p99_ms']:9.2f}  max {v['max_ms'] or 0:9.2f} ms")
    h = st["health_probe_during"]
    print(f"  /health during streams p50 {h.get('p50_ms', 0):.2f} p99 {h.get('p99_ms', 0):.2f} ms")


def main() -> None:
    parser = bench_arguments(__doc__, "100 streams of sleep:4")
    parser.add_argument("--streams", default=None, help="numbers of open streams, comma-separated (500,2000; "
                                                         "quick 100)")
    parser.add_argument("--rounds", type=int, default=None,
                        help="runs of each server per number of streams, the order alternating (2; quick 1)")
    parser.add_argument("--tuned-bare", action="store_true",
                        help="also a bare agent with its garbage collector tuned as the bridge tunes its own")
    args = parser.parse_args()
    args.streams = [int(n) for n in (args.streams or ("100" if args.quick else "500,2000")).split(",")]
    args.rounds = args.rounds if args.rounds is not None else (1 if args.quick else 2)
    args.stream_text = "sleep:4" if args.quick else "sleep:15"
    args.stream_timeout = 120.0
    run_benchmark("streams", args, bench_streams, print_streams)


if __name__ == "__main__":
    main()
