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
SQLite is measured with one process and with two workers too. Each PostgreSQL setup gets a
new database of its own (made and dropped here: the role needs CREATEDB). Each setup's CPU per
completed request is recorded beside its req/s (``cpu_ms_per_request``, medians of the rounds):
the bridge processes', the PostgreSQL backends serving them, and the PostgreSQL server's shared
processes (``benchlib.CpuAccount``), so that a regression shows as a number.

``--baseline-code DIR`` adds the PostgreSQL setups of another copy of the package (DIR holds
its ``ovos_a2a_solver``, e.g. ``git archive REV ovos_a2a_solver | tar -x -C DIR``), measured
in the same rounds. ``--events`` also measures live events between two replicas A and B under
load (wrk on A, and on B): tasks run on A, each subscribed on A and on B; the delay is when a
sentence reaches B's subscriber less when it reaches A's.
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from benchlib import BridgeProcess, write_json, wrk_rounds


def echo_bridge(workdir: Path, name: str, db: str | None, workers: int = 1, code: str | None = None,
                tokens: str = "") -> BridgeProcess:
    """A bridge named ``name`` (its log in ``workdir``) with the echo backend, on SQLite in a
    state directory of its own or on ``db``, as a replica of a fresh name (the package in
    ``code`` if given); not yet started."""
    replica = f"bench-{uuid.uuid4().hex[:6]}"
    state = workdir / f"state-{replica}"
    state.mkdir()
    flags = ["--backend", "echo", "--max-concurrent", "256", "--state-dir", str(state), "--workers", str(workers),
             *(["--db", db] if db else [])]
    env = {"OVOS_A2A_REPLICA": replica, **({"OVOS_A2A_TOKENS": tokens} if tokens else {})}
    if code:
        env["PYTHONPATH"] = os.pathsep.join([code, *filter(None, [os.environ.get("PYTHONPATH")])])
    return BridgeProcess(workdir, name, flags, env=env)


class Databases:
    """New PostgreSQL databases beside the one of ``url`` (made on demand, dropped at the end)."""

    def __init__(self, url: str) -> None:
        from sqlalchemy.engine import make_url

        self.url = make_url(url)
        self.made: list[str] = []

    def _admin(self, statement: str) -> None:
        import asyncpg

        async def run() -> None:
            connection = await asyncpg.connect(self.url.set(drivername="postgresql").render_as_string(False))
            try:
                await connection.execute(statement)
            finally:
                await connection.close()

        asyncio.run(run())

    def new(self) -> str:
        name = f"ovos_a2a_bench_{uuid.uuid4().hex[:10]}"
        self._admin(f'CREATE DATABASE "{name}"')
        self.made.append(name)
        return self.url.set(database=name).render_as_string(hide_password=False)

    def backends_cpu(self, url: str) -> float:
        """CPU seconds used so far by the PostgreSQL server processes serving the database of
        ``url`` (NaN if the server runs on another machine)."""
        import asyncpg
        from sqlalchemy.engine import make_url

        from benchlib import proc_cpu

        async def pids() -> list[int]:
            connection = await asyncpg.connect(self.url.set(drivername="postgresql").render_as_string(False))
            try:
                return [row[0] for row in await connection.fetch(
                    "SELECT pid FROM pg_stat_activity WHERE datname = $1", make_url(url).database)]
            finally:
                await connection.close()

        try:
            return sum(proc_cpu(pid) for pid in asyncio.run(pids()))
        except Exception as exc:  # the server's connections are all taken: no figure rather than no run
            print(f"  (no CPU figure for the database: {exc})", flush=True)
            return float("nan")

    def drop_all(self) -> None:
        for name in self.made:
            self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


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
    parser.add_argument("--rounds", type=int, default=3, help="with --wrk: rounds of wrk per setup, the order alternating")
    parser.add_argument("--json", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                                       "replicas.json"), help="where the figures are written")
    parser.add_argument("--wrk", action="store_true", help="wrk as the load; two replicas are two workers")
    parser.add_argument("--baseline-code", default="", help="with --wrk: a folder holding another ovos_a2a_solver, "
                                                            "whose PostgreSQL setups are measured alongside")
    parser.add_argument("--events", action="store_true", help="with --wrk: live events between two replicas")
    parser.add_argument("--events-only", action="store_true", help="only the live events between two replicas")
    parser.add_argument("--event-tasks", type=int, default=12, help="tasks of five sentences for --events")
    parser.add_argument("--event-load", type=int, default=4, help="wrk connections to each replica during --events")
    options = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench_replicas_"))
    try:
        if options.events_only:
            main_events(options, workdir)
        elif options.wrk:
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
    """All setups started, then wrk against each one's URL, ``--seconds`` per round, ``--rounds``
    rounds with the order alternating (:func:`benchlib.wrk_rounds`); medians. With ``--baseline-code``
    a second run of the same kind follows: one PostgreSQL process of this code beside one of
    the other (PostgreSQL's connections may be too few for all setups at once)."""
    databases = Databases(options.db)
    try:
        results, within = run_setups(workdir, databases, options, [
            ("sqlite x1", False, 1, None), ("sqlite 2 workers", False, 2, None),
            ("postgresql x1", True, 1, None), ("postgresql 2 workers", True, 2, None)],
            [("postgresql x1", "sqlite x1"), ("postgresql 2 workers", "postgresql x1"),
             ("sqlite 2 workers", "sqlite x1")])
        if options.baseline_code:
            beside, within_baseline = run_setups(workdir, databases, options, [
                ("postgresql x1 (beside the baseline)", True, 1, None),
                ("postgresql x1 (baseline)", True, 1, options.baseline_code)],
                [("postgresql x1 (beside the baseline)", "postgresql x1 (baseline)")])
            results.update(beside)
            within.update(within_baseline)
        events = {}
        if options.events:
            codes = [("", None)] + ([(" (baseline)", options.baseline_code)] if options.baseline_code else [])
            for suffix, code in codes:
                events["postgresql A to B" + suffix] = measure_events(workdir, databases.new(), code, options)
    finally:
        databases.drop_all()
    base = results["sqlite x1"]["rps"]
    print("median throughput relative to one SQLite process: " +
          ", ".join(f"{label} {r['rps'] / base:.2f}" for label, r in results.items()))
    ratios = {"postgresql x1 / sqlite x1": results["postgresql x1"]["rps"] / base,
              "postgresql 2 workers / postgresql x1": results["postgresql 2 workers"]["rps"]
              / results["postgresql x1"]["rps"]}
    if options.baseline_code:
        ratios["postgresql x1 / postgresql x1 (baseline)"] = (results["postgresql x1 (beside the baseline)"]["rps"]
                                                              / results["postgresql x1 (baseline)"]["rps"])
    print("ratios of the medians: " + ", ".join(f"{k} {v:.2f}" for k, v in ratios.items()))
    print("medians of the ratios within a round: " + ", ".join(f"{k} {v['median']:.2f}" for k, v in within.items() if v))
    target = options.json.replace(".json", "-wrk.json") if options.json.endswith(".json") else options.json
    write_json(target, {"command": "python bench/bench_replicas.py --db postgresql+asyncpg://… --wrk "
                                   f"--seconds {options.seconds:g} --concurrency {options.concurrency} "
                                   f"--rounds {options.rounds}" + (" --baseline-code DIR" if options.baseline_code else "")
                                   + (" --events" if options.events else ""),
                        "results": results, "ratios": ratios, "ratios_within_rounds": within,
                        "events_between_replicas": events})


def run_setups(workdir: Path, databases: "Databases", options, setups: list, pairs: list) -> tuple[dict, dict]:
    """The setups (label, on PostgreSQL, workers, code) side by side, in alternating rounds of
    wrk: per setup the median req/s, p50, p99, and the CPU per message of the bridge and (on
    PostgreSQL, a database of its own each) of the database's server processes; and for each
    pair of labels in ``pairs`` the median of its ratios within a round."""
    setups = [(label, databases.new() if on_postgres else None, workers, code)
              for label, on_postgres, workers, code in setups]
    bridges = [echo_bridge(workdir, label, db, workers, code) for label, db, workers, code in setups]
    database_cpu: dict[str, float] = {}

    def database_cpu_per_request(result: dict) -> None:
        """The CPU the database's server processes spent per completed message, over all rounds
        (they serve the bridges' connections, which stay open from start to stop)."""
        for label, db, _workers, _code in setups:
            if db:
                ok = sum(r["ok"] for r in result["servers"][label]["rounds"])
                spent = databases.backends_cpu(db)
                database_cpu[label] = round(spent * 1000 / ok, 3) if ok and spent == spent else None

    try:
        for bridge in bridges:  # one at a time
            bridge.start()
        measured = wrk_rounds(bridges, workdir, options.concurrency, options.seconds, options.rounds, False,
                              pairs, before_stop=database_cpu_per_request)
    finally:
        for bridge in bridges:
            bridge.stop()
    results = {label: {"rps": entry["median_rps"], "p50": statistics.median(x["p50_ms"] for x in entry["rounds"]),
                       "p99": entry["median_p99_ms"], "errors": sum(x["bad"] for x in entry["rounds"]),
                       "cpu_ms_per_request": entry["median_cpu_ms_per_ok"],
                       "bridge_cpu_ms_per_request": statistics.median(x["server_cpu_ms_per_ok"]
                                                                      for x in entry["rounds"]),
                       "database_cpu_ms_per_request": database_cpu.get(label), "rounds": entry["rounds"]}
               for label, entry in measured["servers"].items()}
    for label, r in results.items():
        print(f"  {label:36s} {r['rps']:7.1f} req/s; CPU per message: bridge {r['bridge_cpu_ms_per_request']:.2f} ms"
              + (f", database {r['database_cpu_ms_per_request']:.2f} ms" if r["database_cpu_ms_per_request"] else ""),
              flush=True)
    return results, measured["ratios_within_rounds"]


EVENT_TOKEN = "bench-replica-events-3Jd8"


def main_events(options, workdir: Path) -> None:
    """Only the live events between replicas (of this code, and of ``--baseline-code``)."""
    databases = Databases(options.db)
    events = {}
    try:
        codes = [("", None)] + ([(" (baseline)", options.baseline_code)] if options.baseline_code else [])
        for suffix, code in codes:
            events["postgresql A to B" + suffix] = measure_events(workdir, databases.new(), code, options)
    finally:
        databases.drop_all()
    target = options.json.replace(".json", "-events.json") if options.json.endswith(".json") else options.json
    write_json(target, {"command": "python bench/bench_replicas.py --db postgresql+asyncpg://… --events-only "
                                   f"--event-tasks {options.event_tasks} --event-load {options.event_load}"
                                   + (" --baseline-code DIR" if options.baseline_code else ""),
                        "events_between_replicas": events})


def measure_events(workdir: Path, db: str, code: str | None, options) -> dict:
    """Replicas A and B on ``db``, wrk on each meanwhile (``--event-load`` connections);
    ``--event-tasks`` tasks of five sentences 0.3 s apart run on A, four at a time, each
    subscribed on A and on B. The delays (ms) of B's subscriber behind A's, per sentence seen
    by both: median, p90, max."""
    import subprocess
    import threading

    from benchlib import WRK_SCRIPT

    a = echo_bridge(workdir, "events A", db, code=code, tokens=EVENT_TOKEN)
    b = echo_bridge(workdir, "events B", db, code=code, tokens=EVENT_TOKEN)
    headers = {"A2A-Version": "1.0", "Authorization": f"Bearer {EVENT_TOKEN}"}
    a.start()
    b.start()
    loads = []
    try:
        for bridge in (a, b):
            script = workdir / f"events-load-{uuid.uuid4().hex}.lua"  # message ids of its own
            script.write_text(WRK_SCRIPT.replace("RUN", uuid.uuid4().hex).replace(
                '["A2A-Version"] = "1.0"', f'["A2A-Version"] = "1.0", ["Authorization"] = "Bearer {EVENT_TOKEN}"'))
            loads.append(subprocess.Popen(["wrk", "-t1", f"-c{options.event_load}", "-d600s", "-s", str(script),
                                           bridge.rpc_url], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(2)  # the load is on
        seen: dict[str, dict] = {"a": {}, "b": {}}

        def subscribe(url: str, task_id: str, into: dict, ready: threading.Event) -> None:
            body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}}
            with httpx.stream("POST", url, json=body, timeout=120,
                              headers={**headers, "Accept": "text/event-stream"}) as response:
                for line in response.iter_lines():
                    if line.startswith("data:"):
                        ready.set()
                        update = json.loads(line[5:]).get("result", {}).get("artifactUpdate")
                        if update:
                            text = "".join(p.get("text", "") for p in update["artifact"]["parts"])
                            into[(task_id, text)] = time.monotonic()

        for start in range(0, options.event_tasks, 4):
            threads = []
            for _ in range(min(4, options.event_tasks - start)):
                body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
                    "message": {"role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": [{"text": "slow:0.3"}]},
                    "configuration": {"returnImmediately": True}}}
                task_id = httpx.post(a.rpc_url, json=body, headers=headers, timeout=60).json()["result"]["task"]["id"]
                for url, into in ((a.rpc_url, seen["a"]), (b.rpc_url, seen["b"])):
                    ready = threading.Event()
                    thread = threading.Thread(target=subscribe, args=(url, task_id, into, ready), daemon=True)
                    thread.start()
                    ready.wait(30)
                    threads.append(thread)
            for thread in threads:
                thread.join(120)
    finally:
        for load_process in loads:
            load_process.terminate()
            load_process.wait()
        a.stop()
        b.stop()
    delays = sorted((seen["b"][key] - seen["a"][key]) * 1000 for key in set(seen["a"]) & set(seen["b"]))
    if not delays:
        raise RuntimeError("no sentence reached both subscribers")
    result = {"sentences": len(delays), "median_ms": round(statistics.median(delays), 2),
              "p90_ms": round(delays[int(0.9 * (len(delays) - 1))], 2), "max_ms": round(delays[-1], 2)}
    print(f"  live events A to B{' (baseline)' if code else ''}: {result}", flush=True)
    return result


if __name__ == "__main__":
    main()
