#!/usr/bin/env python3
# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""GetTask and ListTasks latency with 100,000 stored tasks: through the bridge over HTTP beside a
bare a2a-sdk server holding the same tasks in an InMemoryTaskStore, and on the bridge's task
store directly (no HTTP, no request handler).

    python bench/bench_store.py [--tasks 100000] [--db URL] [--baseline-code DIR] [--quick] [--keep]
                                [--json bench/results/bridge-store.json]

Queries (page size 50): GetTask, the first page, a page half way down by cursor, a page
filtered by contextId, and pages filtered by status (one that every task has, one that none
has); one request at a time, alternating between the servers. Every answer is checked (the
tasks of the page, its ``totalSize``). The tasks are made deterministically
(``benchlib.make_tasks``), all of one owner (the unauthenticated caller).

The bridge's store is filled before it starts, through its own store
(``bridge.storage.database.open_stores``, every task by ``save``), in a process that imports
the measured code; the same process then times the store's ``get`` and ``list`` directly.

``--db URL``: the database the bridge keeps its tasks in (its ``--db``), instead of a SQLite
file in the run's state directory. A PostgreSQL URL names the server: the run makes a new
database on it (the URL's role needs CREATEDB) and drops it at the end.
``--baseline-code DIR``: also a bridge of another checkout of the package (``DIR``, its root),
its own store filled by its own code with the same tasks, side by side, with the ratios of this
one's latencies to it: a change measured before and after in one run.

``--quick``: 10,000 tasks, shorter query budgets. The results are recorded under the key ``store``.

Internal: ``python bench/bench_store.py _store --url URL --tasks N --budget S --max N`` (fill
and time the store of the code on PYTHONPATH; one JSON line).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchlib import (CODE_ENV, HEADERS, PY, BareProcess, BridgeProcess, ServerProcess, bench_arguments, make_tasks,
                      proc_cpu, proc_status, run_benchmark, summary)

PAGE = 50


# ---- the queries, and what each must answer ------------------------------------------------

class Queries:
    """The kinds of query, each as a request (a GetTask id or a ``ListTasksRequest``) with what
    its answer must hold, drawn from the stored ``tasks``."""

    def __init__(self, tasks: list) -> None:
        from a2a.types import TaskState
        from a2a.utils.task import ListTasksCursor, encode_list_tasks_cursor

        self.tasks = tasks
        self.order = sorted(tasks, key=lambda t: (t.status.timestamp.ToNanoseconds(), t.id), reverse=True)
        self.deep = len(self.order) // 2
        before = self.order[self.deep - 1]
        self.cursor = encode_list_tasks_cursor(ListTasksCursor(timestamp_ns=before.status.timestamp.ToNanoseconds(),
                                                               task_id=before.id))
        self.contexts = sorted({t.context_id for t in tasks})
        self.per_context = Counter(t.context_id for t in tasks)
        self.per_state = Counter(t.status.state for t in tasks)
        self.common = TaskState.TASK_STATE_COMPLETED   # every task of make_tasks
        self.absent = TaskState.TASK_STATE_WORKING     # none
        self.rng = random.Random(11)
        self.kinds = ["GetTask", "ListTasks first page", f"ListTasks page at {self.deep} (cursor)",
                      "ListTasks by contextId", "ListTasks by status (all match)", "ListTasks by status (none match)"]

    def make(self, kind: str):
        """(request, expectation): a task id for GetTask, else a ``ListTasksRequest``; the
        expectation a dict of ``id`` (GetTask), ``first`` (the first task's id), ``n`` (tasks on
        the page) and ``total``."""
        from a2a.types import ListTasksRequest

        n = len(self.tasks)
        if kind == "GetTask":
            task = self.tasks[self.rng.randrange(n)]
            return task.id, {"id": task.id}
        if kind == "ListTasks first page":
            return ListTasksRequest(page_size=PAGE), {"first": self.order[0].id, "n": PAGE, "total": n}
        if kind.startswith("ListTasks page at"):
            return (ListTasksRequest(page_size=PAGE, page_token=self.cursor),
                    {"first": self.order[self.deep].id, "n": PAGE, "total": n})
        if kind == "ListTasks by contextId":
            context = self.contexts[self.rng.randrange(len(self.contexts))]
            count = self.per_context[context]
            return ListTasksRequest(page_size=PAGE, context_id=context), {"n": min(count, PAGE), "total": count}
        state = self.common if "all match" in kind else self.absent
        count = self.per_state[state]
        expect = {"n": min(count, PAGE), "total": count}
        if count:
            expect["first"] = self.order[0].id
        return ListTasksRequest(page_size=PAGE, status=state), expect


def check(answer: dict, expect: dict) -> str | None:
    """None if ``answer`` (a task, or a ListTasks result, as JSON) holds ``expect``, else what is wrong."""
    if "id" in expect:
        return None if answer.get("id") == expect["id"] else "wrong task"
    found = answer.get("tasks", [])
    if len(found) != expect["n"]:
        return f"{len(found)} tasks, expected {expect['n']}"
    if "first" in expect and found[0].get("id") != expect["first"]:
        return "wrong page"
    if int(answer.get("totalSize", 0)) != expect["total"]:
        return f"totalSize {answer.get('totalSize')}, expected {expect['total']}"
    return None


# ---- the store directly, in a process of the measured code (``_store``) -------------------------

async def fill_or_time_store(url: str, n: int, fill: bool, budget_s: float, max_n: int) -> dict:
    """With ``fill``: fill the store of ``url`` with ``make_tasks(n)`` through the code's
    ``open_stores`` and read a sample back. Else time ``get`` and ``list`` on it, one call at a
    time (the figures without HTTP and the request handler)."""
    import importlib

    from a2a.server.context import ServerCallContext
    from a2a.server.tasks import TaskStore
    from google.protobuf.json_format import MessageToDict

    t0 = time.perf_counter()
    tasks = make_tasks(n)
    generate_s = time.perf_counter() - t0
    opener = None
    for where in ("ovos_a2a_solver.bridge.storage.database", "ovos_a2a_solver.bridge.app"):  # the code's version
        try:
            opener = getattr(importlib.import_module(where), "open_stores", None)
        except ImportError:
            continue
        if opener is not None:
            break
    if opener is None:
        raise SystemExit("this code has no open_stores: it is older than bench_store.py measures")
    opened = opener(url)
    db, store = opened[0], opened[1]  # (earlier versions returned a third value: the same store)
    await store.initialize()
    context = ServerCallContext()
    versioned = not isinstance(store, TaskStore)  # the a2a-sdk's VersionedTaskStore interface

    async def save(task) -> None:
        if versioned:
            from a2a.server.cluster import TaskVersion
            await store.save(task, event=task, prev=None, prev_version=TaskVersion.MISSING, context=context)
        else:
            await store.save(task, context)

    async def get(task_id: str):
        found = await store.get(task_id, context)
        return found.task if versioned and found is not None else found

    if fill:
        t0 = time.perf_counter()
        for start in range(0, n, 500):  # 500 saves in flight at a time
            await asyncio.gather(*(save(t) for t in tasks[start:start + 500]))
        save_s = time.perf_counter() - t0
        sample = random.Random(7).sample(tasks, min(n, 500))
        mismatches = sum([await get(t.id) != t for t in sample])
        await db.aclose()
        return {"store": type(store).__name__, "rows": n, "save_ms_each": round(save_s * 1000 / max(n, 1), 3),
                "save_all_s": round(save_s, 1), "generate_s": round(generate_s, 2),
                "readback_checked": len(sample), "readback_mismatches": mismatches}

    queries = Queries(tasks)
    latency: dict = {}
    for kind in queries.kinds:
        samples, errors = [], Counter()
        deadline = time.perf_counter() + budget_s
        i = 0
        while i < max_n and (time.perf_counter() < deadline or i < 20):
            request, expect = queries.make(kind)
            started = time.perf_counter()
            answer = await get(request) if kind == "GetTask" else await store.list(request, context)
            elapsed = time.perf_counter() - started
            problem = check(MessageToDict(answer) if answer is not None else {}, expect)
            if problem:
                errors[problem] += 1
            elif i >= 2:  # the first two warm
                samples.append(elapsed)
            i += 1
        latency[kind] = {**summary(samples), "errors": dict(errors)}
    await db.aclose()
    return latency


def store_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="bench_store.py _store")
    parser.add_argument("--url", required=True)
    parser.add_argument("--tasks", type=int, required=True)
    parser.add_argument("--fill", action="store_true", help="fill the store (else time it)")
    parser.add_argument("--budget", type=float, default=2.0)
    parser.add_argument("--max", type=int, default=2000)
    args = parser.parse_args(argv)
    out = asyncio.run(fill_or_time_store(args.url, args.tasks, args.fill, args.budget, args.max))
    print("BENCH-STORE " + json.dumps(out), flush=True)


def run_store_process(url: str, args, env: dict, log: Path, fill: bool) -> dict:
    """:func:`store_main` in a process of its own, with ``env`` (the code's PYTHONPATH): the
    store filled (``fill``), or timed."""
    command = [PY, str(Path(__file__).resolve()), "_store", "--url", url, "--tasks", str(args.tasks),
               *(["--fill"] if fill else ["--budget", str(args.store_budget), "--max", str(args.query_max)])]
    with open(log, "w") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **env}, timeout=7200)
    text = log.read_text()
    line = next((l for l in text.splitlines() if l.startswith("BENCH-STORE ")), None)
    if done.returncode != 0 or line is None:
        raise RuntimeError(f"filling the store failed (exit {done.returncode}):\n{text[-2000:]}")
    return json.loads(line[len("BENCH-STORE "):])


# ---- PostgreSQL: a new database for the run ----------------------------------------------------

def _admin(url: str, statement: str) -> None:
    """Run ``statement`` on the database of ``url``, outside a transaction."""
    import asyncpg
    from sqlalchemy.engine import make_url

    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)

    async def run() -> None:
        connection = await asyncpg.connect(dsn)
        try:
            await connection.execute(statement)
        finally:
            await connection.close()

    asyncio.run(run())


class Databases:
    """Where each bridge of the run keeps its tasks: a SQLite file in its state directory, or
    (``--db`` a PostgreSQL URL) a new database on that server, dropped by :meth:`drop`."""

    def __init__(self, db: str) -> None:
        self.db = db
        self.made: list[str] = []

    def url_for(self, state: Path) -> tuple[str, list[str]]:
        """(the store's URL, the bridge's flags for it) of a bridge whose state directory is ``state``."""
        if not self.db:
            return f"sqlite:///{state / 'bridge.sqlite3'}", []
        if self.db.startswith("sqlite"):
            raise SystemExit("--db: give a PostgreSQL URL; without --db each bridge has a SQLite file of its own")
        from sqlalchemy.engine import make_url
        name = f"bench_store_{uuid.uuid4().hex[:10]}"
        _admin(self.db, f'CREATE DATABASE "{name}"')
        self.made.append(name)
        url = make_url(self.db).set(database=name).render_as_string(hide_password=False)
        return url, ["--db", url]

    def drop(self) -> None:
        for name in self.made:
            _admin(self.db, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# ---- over HTTP ---------------------------------------------------------------------------------

def rpc(method: str, params: dict, rid: int = 1) -> str:
    """A JSON-RPC request body."""
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})


def rpc_body(kind: str, request) -> str:
    from google.protobuf.json_format import MessageToDict
    return rpc("GetTask", {"id": request}) if kind == "GetTask" else rpc("ListTasks", MessageToDict(request))


async def query_latency(servers: list[ServerProcess], tasks: list, budget_s: float, max_n: int) -> dict:
    """Every kind of :class:`Queries`, one request at a time, alternating between the servers."""
    import httpx

    queries = Queries(tasks)
    out: dict = {s.label: {} for s in servers}
    async with httpx.AsyncClient(timeout=60, headers=HEADERS) as hc:
        for kind in queries.kinds:
            lat = {s.label: [] for s in servers}
            errs = {s.label: Counter() for s in servers}
            for _ in range(2):  # warm
                for s in servers:
                    await hc.post(s.rpc_url, content=rpc_body(kind, queries.make(kind)[0]))
            cpu0 = {s.label: proc_cpu(s.pid) for s in servers}
            deadline = time.perf_counter() + budget_s
            i = 0
            min_n = 20 if kind == "GetTask" else 10  # a full-table ListTasks of the bare server takes ~1 s here
            while i < max_n and (time.perf_counter() < deadline or i < min_n):
                request, expect = queries.make(kind)
                body = rpc_body(kind, request)
                for s in (servers if i % 2 == 0 else servers[::-1]):
                    t0 = time.perf_counter()
                    r = await hc.post(s.rpc_url, content=body)
                    dt = time.perf_counter() - t0
                    problem = f"http {r.status_code}" if r.status_code != 200 else None
                    if problem is None:
                        data = r.json()
                        problem = (f"rpc {data['error'].get('code')}: {data['error'].get('message')}"[:80]
                                   if "error" in data else check(data.get("result", {}), expect))
                    if problem:
                        errs[s.label][problem] += 1
                    else:
                        lat[s.label].append(dt)
                i += 1
            for s in servers:
                entry = summary(lat[s.label])
                entry["errors"] = dict(errs[s.label])
                entry["server_cpu_ms_each"] = round((proc_cpu(s.pid) - cpu0[s.label]) * 1000 / i, 3)
                out[s.label][kind] = entry
            print("  " + f"{kind:34s}" + "  ".join(
                f"{s.label} p50 {out[s.label][kind].get('p50_ms', float('nan')):7.2f} p99 "
                f"{out[s.label][kind].get('p99_ms', float('nan')):7.2f}" + (
                    f" ERR {dict(errs[s.label])}" if errs[s.label] else "") for s in servers) + " ms", flush=True)
    return out


def preflight(server: ServerProcess, task_id: str) -> str:
    """"ok" if ``server`` answers GetTask for a pre-filled task, else what went wrong."""
    import httpx
    try:
        data = httpx.post(server.rpc_url, content=rpc("GetTask", {"id": task_id}), headers=HEADERS, timeout=30).json()
    except (httpx.HTTPError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    if "error" in data:
        return f"rpc {data['error'].get('code')}: {data['error'].get('message')}"
    return "ok" if data.get("result", {}).get("id") == task_id else "wrong task"


def ratios(latency: dict, a: str, b: str) -> dict:
    """p50 and p99 of ``a`` over ``b``, by kind of query."""
    out = {}
    for kind, entry in latency[a].items():
        other = latency[b].get(kind, {})
        out[kind] = {q: round(entry[q] / other[q], 3) if entry.get(q) and other.get(q) else None
                     for q in ("p50_ms", "p99_ms")}
    return out


def bench_store(args, workdir: Path, persona: Path) -> dict:
    """Fill each bridge's store and the bare server's memory with the same tasks (the stores timed
    directly meanwhile), check the bridges serve them, then time the queries over HTTP."""
    n = args.tasks
    print(f"\n== GetTask / ListTasks with {n} stored tasks", flush=True)
    databases = Databases(args.db)
    sides = [("bridge", dict(CODE_ENV))]
    if args.baseline_code:
        sides.append(("bridge_baseline", {"PYTHONPATH": str(Path(args.baseline_code).resolve())}))
    bridges, fills, urls = [], {}, {}
    bare = BareProcess(workdir, "bare_store", persona, prefill=n)
    pool = ThreadPoolExecutor(1 + len(sides))
    result: dict = {"tasks": n, "page_size": PAGE, "database": "postgresql" if args.db else "sqlite"}
    try:
        bare_started = pool.submit(bare.start)  # fills its InMemoryTaskStore while the stores are written
        for label, env in sides:
            state = workdir / f"state-{label}"
            state.mkdir(parents=True, exist_ok=True)
            url, flags = databases.url_for(state)
            bridge = BridgeProcess(workdir, label, ["--persona", str(persona), "--state-dir", str(state), *flags],
                                   env=env)
            bridge.label = label
            bridges.append(bridge)
            urls[label] = (url, env)
            fills[label] = pool.submit(run_store_process, url, args, env, workdir / f"fill-{label}.log", True)
        result["prefill"] = {}
        for label, fill in fills.items():
            p = result["prefill"][label] = fill.result()
            print(f"  {label}: {p['store']} filled with {p['rows']} tasks by save() at {p['save_ms_each']} ms each; "
                  f"read-back mismatches {p['readback_mismatches']}/{p['readback_checked']}", flush=True)
        bare_started.result()  # nothing else runs while the stores are timed, one after the other
        result["store_direct"] = {}
        for label, (url, env) in urls.items():
            latency = result["store_direct"][label] = run_store_process(url, args, env, workdir / f"time-{label}.log",
                                                                        False)
            for kind, entry in latency.items():
                print(f"  {label} store directly: {kind:34s} p50 {entry.get('p50_ms', float('nan')):7.2f} "
                      f"p99 {entry.get('p99_ms', float('nan')):7.2f} ms" +
                      (f" ERR {entry['errors']}" if entry["errors"] else ""), flush=True)
        if not args.db:
            result["db_file_mib"] = {b.label: round((workdir / f"state-{b.label}" / "bridge.sqlite3").stat().st_size
                                                    / 2 ** 20, 1) for b in bridges}
        for bridge in bridges:
            bridge.start()
        servers = [*bridges, bare]
        for s in servers:
            print(f"  started {s.label:15s} pid {s.pid} in {s.startup_s:5.1f} s, RSS "
                  f"{proc_status(s.pid).get('VmRSS', 0) / 1024:.0f} MiB", flush=True)
        tasks = make_tasks(n)
        result["preflight"] = {b.label: preflight(b, tasks[0].id) for b in bridges}
        for label, verdict in result["preflight"].items():
            if verdict != "ok":
                print(f"  WARNING: {label} does not serve the pre-filled tasks ({verdict}); its latencies below are "
                      f"of errors.", flush=True)
        result["startup_s"] = {s.label: round(s.startup_s, 2) for s in servers}
        result["rss_kib"] = {s.label: proc_status(s.pid).get("VmRSS") for s in servers}
        result["latency"] = asyncio.run(query_latency(servers, tasks, args.query_budget, args.query_max))
        result["log"] = {s.label: s.log_findings() for s in servers}
        if args.baseline_code:
            result["ratio_to_baseline"] = {"http": ratios(result["latency"], "bridge", "bridge_baseline"),
                                           "store_direct": ratios(result["store_direct"], "bridge", "bridge_baseline")}
    finally:
        for bridge in bridges:
            bridge.stop()
        pool.shutdown(wait=True)  # the bare server's start has returned (or failed): its process is known
        bare.stop()
        databases.drop()
    return result


def print_store(store: dict) -> None:
    """The latency per query and server over HTTP, then on the stores directly, as tables."""
    if "latency" not in store:
        return
    print(f"{store['tasks']} stored tasks (bridges: {store['database']}; bare: InMemoryTaskStore), pages of "
          f"{store['page_size']}")
    for title, table in (("over HTTP", store["latency"]), ("the store directly", store.get("store_direct", {}))):
        labels = list(table)
        if not labels:
            continue
        print(f"  {title}")
        print(f"  {'query':36s}" + "".join(f"{lab + ' p50':>22s}{'p99':>9s}" for lab in labels))
        for kind in table[labels[0]]:
            row = [table[lab].get(kind, {}) for lab in labels]
            print(f"  {kind:36s}" + "".join(f"{e.get('p50_ms', float('nan')):22.2f}{e.get('p99_ms', float('nan')):9.2f}"
                                             for e in row))
    for where, by_kind in store.get("ratio_to_baseline", {}).items():
        print(f"  bridge / bridge_baseline ({where}): " + "; ".join(
            f"{kind} p99 {r['p99_ms']}" for kind, r in by_kind.items()))


def main() -> None:
    parser = bench_arguments(__doc__, "10,000 tasks, shorter query budgets")
    parser.add_argument("--tasks", type=int, default=None, help="stored tasks (100000; quick 10000)")
    parser.add_argument("--db", default="", metavar="URL",
                        help="a PostgreSQL server for the bridges' tasks (a new database on it per bridge)")
    parser.add_argument("--baseline-code", default="", metavar="DIR",
                        help="also the bridge of the package in this checkout, for ratios before/after")
    args = parser.parse_args()
    args.tasks = args.tasks if args.tasks is not None else (10_000 if args.quick else 100_000)
    args.query_budget = 2.0 if args.quick else 4.0
    args.store_budget = 1.0 if args.quick else 2.0
    args.query_max = 300 if args.quick else 2000
    run_benchmark("store", args, bench_store, print_store)


if __name__ == "__main__":
    if sys.argv[1:2] == ["_store"]:
        store_main(sys.argv[2:])
    else:
        main()
