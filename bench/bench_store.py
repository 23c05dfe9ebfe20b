#!/usr/bin/env python3
# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""GetTask and ListTasks latency with 100,000 stored tasks: the bridge (SQLite) beside a bare
a2a-sdk server holding the same tasks in an InMemoryTaskStore.

    python bench/bench_store.py [--tasks 100000] [--quick] [--keep] [--json bench/results/bridge-store.json]

Queries (page size 50): GetTask, the first page, a page half way down by cursor, and a page
filtered by contextId; one request at a time, alternating between the two servers. The tasks
are made deterministically (``benchlib.make_tasks``). The bridge's SQLite file is filled before
it starts, through its own store where the measured code has one (``bridge.app.open_stores``),
else through the a2a-sdk: 300 tasks via ``DatabaseTaskStore.save(task, ServerCallContext())``
(timed), the rest as the same ``TaskModel`` rows in bulk, because one ``save`` costs ~10 ms of
ORM work on a small machine; a sample of both is read back with ``get`` and compared with the
original.

``--quick``: 10,000 tasks, shorter query budgets. The results are recorded under the key ``store``.
"""
from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchlib import (HEADERS, BareProcess, BridgeProcess, ServerProcess, bench_arguments, make_tasks, proc_cpu,
                      proc_status, run_benchmark, summary)


async def prefill_bridge_store(db_file: Path, tasks: list, via_save: int) -> dict:
    """Write ``tasks`` where the bridge will read them.

    If the measured bridge code opens its SQLite store itself (``open_stores``: in
    ``bridge.storage.database``, earlier in ``bridge.app``; the bridge's own ``TaskStore``),
    every task goes through that store's ``save(task, ServerCallContext())``. Otherwise the
    bridge uses the a2a-sdk ``DatabaseTaskStore``, and :func:`prefill_sqlite` fills its table.
    """
    import importlib

    bridge_app = None
    for where in ("ovos_a2a_solver.bridge.storage.database", "ovos_a2a_solver.bridge.app"):  # the snapshot's
        try:
            bridge_app = importlib.import_module(where)
        except ImportError:
            continue
        if hasattr(bridge_app, "open_stores"):
            break
    if bridge_app is None or not hasattr(bridge_app, "open_stores"):
        out = await prefill_sqlite(db_file, tasks, via_save)
        out["store"] = "a2a-sdk DatabaseTaskStore"
        return out
    from a2a.server.context import ServerCallContext

    opened = bridge_app.open_stores(f"sqlite+aiosqlite:///{db_file}")
    db, store = opened[0], opened[1]  # (earlier versions returned a third value: the same store)
    to_initialize = store
    await to_initialize.initialize()
    context = ServerCallContext()
    t0 = time.perf_counter()
    for start in range(0, len(tasks), 500):  # 500 saves in flight at a time
        await asyncio.gather(*(store.save(t, context) for t in tasks[start:start + 500]))
    save_s = time.perf_counter() - t0
    rng = random.Random(7)
    sample = rng.sample(tasks, min(len(tasks), 500))
    mismatches = 0
    for t in sample:
        mismatches += await store.get(t.id, context) != t
    await db.aclose()
    return {"store": f"bridge's own {type(store).__name__}", "rows": len(tasks), "via_save": len(tasks),
            "save_ms_each": round(save_s * 1000 / max(len(tasks), 1), 3), "bulk_rows": 0, "bulk_s": 0.0,
            "readback_checked": len(sample), "readback_mismatches": mismatches,
            "save_all_estimate_s": round(save_s, 1)}


async def prefill_sqlite(db_file: Path, tasks: list, via_save: int) -> dict:
    """Write ``tasks`` into the a2a-sdk ``tasks`` table of ``db_file``.

    The first ``via_save`` go through ``DatabaseTaskStore.save(task, ServerCallContext())``
    (timed); the rest are inserted in bulk as the same ``TaskModel`` rows ``save`` writes (one
    ``save`` costs ~3 ms of SQLAlchemy ORM work here, ~5 min for 100k). A sample of both kinds is
    read back through ``DatabaseTaskStore.get`` and compared with the original task.
    """
    from a2a.server.context import ServerCallContext
    from a2a.server.models import TaskModel
    from a2a.server.owner_resolver import resolve_user_scope
    from a2a.server.tasks import DatabaseTaskStore
    from google.protobuf.json_format import MessageToDict
    from sqlalchemy import func, insert, select
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(f"sqlite+aiosqlite:///{db_file}")
    store = DatabaseTaskStore(engine)
    await store.initialize()
    context = ServerCallContext()
    owner = resolve_user_scope(context)
    t0 = time.perf_counter()
    for task in tasks[:via_save]:
        await store.save(task, context)
    save_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    rest = tasks[via_save:]
    for start in range(0, len(rest), 5000):
        rows = [dict(id=t.id, context_id=t.context_id, kind="task", owner=owner,
                     last_updated=t.status.timestamp.ToDatetime(), status=MessageToDict(t.status),
                     artifacts=[MessageToDict(a) for a in t.artifacts],
                     history=[MessageToDict(m) for m in t.history], task_metadata=None, protocol_version="1.0")
                for t in rest[start:start + 5000]]
        async with engine.begin() as conn:
            await conn.execute(insert(TaskModel), rows)
    bulk_s = time.perf_counter() - t1
    rng = random.Random(7)
    sample = tasks[:min(via_save, 100)] + rng.sample(rest, min(len(rest), 400))
    mismatches = 0
    for t in sample:
        mismatches += await store.get(t.id, context) != t
    async with engine.connect() as conn:
        count = (await conn.execute(select(func.count()).select_from(TaskModel))).scalar_one()
    await engine.dispose()
    return {"rows": count, "via_save": via_save, "save_ms_each": round(save_s * 1000 / max(via_save, 1), 3),
            "bulk_rows": len(rest), "bulk_s": round(bulk_s, 2), "readback_checked": len(sample),
            "readback_mismatches": mismatches,
            "save_all_estimate_s": round(save_s / max(via_save, 1) * len(tasks), 1)}


def rpc(method: str, params: dict, rid: int = 1) -> str:
    """A JSON-RPC request body."""
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})


async def query_latency(servers: list[ServerProcess], tasks: list, budget_s: float, max_n: int) -> dict:
    """GetTask and ListTasks, one request at a time, alternating between the servers."""
    import httpx
    from a2a.utils.task import ListTasksCursor, encode_list_tasks_cursor

    order = sorted(tasks, key=lambda t: (t.status.timestamp.ToNanoseconds(), t.id), reverse=True)
    deep = len(order) // 2
    cursor = encode_list_tasks_cursor(ListTasksCursor(timestamp_ns=order[deep - 1].status.timestamp.ToNanoseconds(),
                                                      task_id=order[deep - 1].id))
    contexts = sorted({t.context_id for t in tasks})
    per_context = Counter(t.context_id for t in tasks)
    rng = random.Random(11)

    def make(kind: str):
        if kind == "GetTask":
            t = tasks[rng.randrange(len(tasks))]
            return rpc("GetTask", {"id": t.id}), ("id", t.id)
        if kind == "ListTasks first page":
            return rpc("ListTasks", {"pageSize": 50}), ("first", order[0].id)
        if kind == f"ListTasks page at {deep} (cursor)":
            return rpc("ListTasks", {"pageSize": 50, "pageToken": cursor}), ("first", order[deep].id)
        c = contexts[rng.randrange(len(contexts))]
        return rpc("ListTasks", {"pageSize": 50, "contextId": c}), ("count", per_context[c])

    def check(data: dict, expect) -> str | None:
        if "error" in data:
            return f"rpc {data['error'].get('code')}: {data['error'].get('message')}"[:80]
        res = data.get("result", {})
        what, value = expect
        if what == "id":
            return None if res.get("id") == value else "wrong task"
        found = res.get("tasks", [])
        if what == "first":
            if len(found) != 50 or found[0].get("id") != value:
                return "wrong page"
            return None if int(res.get("totalSize", 0)) == len(tasks) else f"totalSize {res.get('totalSize')}"
        return None if len(found) == value else f"{len(found)} tasks in context, expected {value}"

    kinds = ["GetTask", "ListTasks first page", f"ListTasks page at {deep} (cursor)", "ListTasks by contextId"]
    out: dict = {s.label: {} for s in servers}
    async with httpx.AsyncClient(timeout=60, headers=HEADERS) as hc:
        for kind in kinds:
            lat = {s.label: [] for s in servers}
            errs = {s.label: Counter() for s in servers}
            for _ in range(2):  # warm
                for s in servers:
                    body, _expect = make(kind)
                    await hc.post(s.rpc_url, content=body)
            cpu0 = {s.label: proc_cpu(s.pid) for s in servers}
            deadline = time.perf_counter() + budget_s
            i = 0
            min_n = 20 if kind == "GetTask" else 10  # a full-table ListTasks takes ~1 s here
            while i < max_n and (time.perf_counter() < deadline or i < min_n):
                body, expect = make(kind)
                for s in (servers if i % 2 == 0 else servers[::-1]):
                    t0 = time.perf_counter()
                    r = await hc.post(s.rpc_url, content=body)
                    dt = time.perf_counter() - t0
                    problem = f"http {r.status_code}" if r.status_code != 200 else check(r.json(), expect)
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
            print("  " + f"{kind:32s}" + "  ".join(
                f"{s.label} p50 {out[s.label][kind].get('p50_ms', float('nan')):8.2f} p99 "
                f"{out[s.label][kind].get('p99_ms', float('nan')):8.2f} ms" + (
                    f" ERR {dict(errs[s.label])}" if errs[s.label] else "") for s in servers), flush=True)
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


def bench_store(args, workdir: Path, persona: Path) -> dict:
    """Fill the bridge's SQLite file and the bare server's memory with the same tasks, check the
    bridge serves them, then time the queries on both."""
    n = args.tasks
    print(f"\n== GetTask / ListTasks with {n} stored tasks", flush=True)
    t0 = time.perf_counter()
    tasks = make_tasks(n)
    gen_s = time.perf_counter() - t0
    state = workdir / "state-store"
    state.mkdir(parents=True, exist_ok=True)
    bridge = BridgeProcess(workdir, "bridge_store", ["--persona", str(persona), "--state-dir", str(state)])
    bare = BareProcess(workdir, "bare_store", persona, prefill=n)
    pool = ThreadPoolExecutor(1)
    bare_started = pool.submit(bare.start)  # fills its InMemoryTaskStore while the SQLite file is written
    try:
        fill = asyncio.run(prefill_bridge_store(state / "bridge.sqlite3", tasks, min(args.via_save, n)))
        fill["generate_s"] = round(gen_s, 2)
        print(f"  SQLite pre-fill ({fill['store']}): {fill['rows']} rows ({fill['via_save']} via save() at "
              f"{fill['save_ms_each']} "
              f"ms each, {fill['bulk_rows']} in bulk in {fill['bulk_s']} s), read-back mismatches "
              f"{fill['readback_mismatches']}/{fill['readback_checked']}", flush=True)
        result = {"tasks": n, "prefill": fill,
                  "db_file_mib": round((state / "bridge.sqlite3").stat().st_size / 2 ** 20, 1)}
        bridge.start()
        bare_started.result()
        for s in (bridge, bare):
            print(f"  started {s.label:10s} pid {s.pid} in {s.startup_s:5.1f} s, RSS "
                  f"{proc_status(s.pid).get('VmRSS', 0) / 1024:.0f} MiB", flush=True)
        result["preflight"] = preflight(bridge, tasks[0].id)
        if result["preflight"] != "ok":
            print(f"  WARNING: the bridge does not serve the pre-filled tasks ({result['preflight']}): has its "
                  f"store's schema changed? Its latencies below are of errors.", flush=True)
        result["startup_s"] = {s.label: round(s.startup_s, 2) for s in (bridge, bare)}
        result["rss_kib"] = {s.label: proc_status(s.pid).get("VmRSS") for s in (bridge, bare)}
        result["latency"] = asyncio.run(query_latency([bridge, bare], tasks, args.query_budget, args.query_max))
        result["log"] = {s.label: s.log_findings() for s in (bridge, bare)}
    finally:
        bridge.stop()
        pool.shutdown(wait=True)  # the bare server's start has returned (or failed): its process is known
        bare.stop()
    return result


def print_store(store: dict) -> None:
    """The latency per query and server, and the ratio of the first to the second, as a table."""
    if "latency" in store:
        print(f"{store['tasks']} stored tasks (bridge: SQLite {store['db_file_mib']} MiB; bare: InMemoryTaskStore)")
        labels = list(store["latency"])
        kinds = list(store["latency"][labels[0]])
        print(f"  {'query':34s}" + "".join(f"{lab + ' p50':>16s}{'p99':>9s}" for lab in labels) + f"{'ratio p50':>11s}")
        for kind in kinds:
            row = [store["latency"][lab][kind] for lab in labels]
            ratio = row[0].get("p50_ms", float("nan")) / row[1].get("p50_ms", float("nan"))
            print(f"  {kind:34s}" + "".join(f"{e.get('p50_ms', float('nan')):16.2f}{e.get('p99_ms', float('nan')):9.2f}"
                                             for e in row) + f"{ratio:11.2f}")


def main() -> None:
    parser = bench_arguments(__doc__, "10,000 tasks, shorter query budgets")
    parser.add_argument("--tasks", type=int, default=None, help="stored tasks (100000; quick 10000)")
    args = parser.parse_args()
    args.tasks = args.tasks if args.tasks is not None else (10_000 if args.quick else 100_000)
    args.via_save = 300
    args.query_budget = 2.0 if args.quick else 4.0
    args.query_max = 300 if args.quick else 2000
    run_benchmark("store", args, bench_store, print_store)


if __name__ == "__main__":
    main()
