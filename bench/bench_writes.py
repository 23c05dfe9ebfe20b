#!/usr/bin/env python3
# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""What a message's writes cost on the bridge's SQLite store, as the store fills: the claim of its
operation (``OperationLog.claim``), the save of its answered task (``SqliteTaskStore.save``) and
its share of the operations' finish (``OperationLog.flush``), in CPU microseconds per message.

    python bench/bench_writes.py [--tasks 60000] [--step 6000] [--concurrency 16] [--quick] [--keep]
                                 [--json bench/results/bridge-writes.json]

Four stores side by side, each filled in steps of ``--step`` messages, the order alternating at
each step:

- ``ordered_grouped``: as the bridge writes, time-ordered ids (``storage.ids``) for the task and its
  context, ``--concurrency`` messages at a time, so that their writes share commits (the store's
  group commit);
- ``random_grouped``: random ids (UUID version 4), as the bridge made them before;
- ``ordered_one_by_one`` and ``random_one_by_one``: one message at a time, a commit for each write.

Reported: each step's cost per message, and for the last half of the steps (the store's size of
most use) the medians and the ratios ``random/ordered`` and ``one_by_one/grouped``. The code
measured is this checkout's. ``--quick``: 12,000 tasks in steps of 3,000. The results are
recorded under the key ``writes``.
"""
from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from pathlib import Path

from a2a.server.context import ServerCallContext
from a2a.types import Artifact, Message, Part, Role, Task, TaskState, TaskStatus

from benchlib import bench_arguments, run_benchmark
from ovos_a2a_solver.bridge.storage.database import SqliteDatabase, SqliteTaskStore
from ovos_a2a_solver.bridge.storage.ids import time_ordered_id
from ovos_a2a_solver.bridge.storage.operations import OperationLog

IDS = {"ordered": time_ordered_id, "random": lambda: str(uuid.uuid4())}


class Store:
    """One SQLite store of the bridge (tasks and operations), and how its messages are written."""

    def __init__(self, path: Path, ids: str, together: int) -> None:
        self.name = f"{ids}_{'grouped' if together > 1 else 'one_by_one'}"
        self.path, self.new_id, self.together = path, IDS[ids], together
        self.context = ServerCallContext()
        self.costs: list[float] = []

    async def open(self) -> None:
        self.db = SqliteDatabase(self.path)
        self.tasks = SqliteTaskStore(self.db)
        self.operations = OperationLog(self.db, "bench", single_process=True)
        await self.tasks.initialize()
        await self.operations.initialize()

    async def message(self, n: int) -> None:
        """The writes of one answered message: its claim, its task, its finish."""
        task_id, context_id = self.new_id(), self.new_id()
        sent = Message(role=Role.ROLE_USER, message_id=f"m-{n}", parts=[Part(text="hello")])
        operation, claimed = await self.operations.claim("", sent, task_id)
        assert claimed
        task = Task(id=task_id, context_id=context_id, status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED),
                    artifacts=[Artifact(artifact_id="answer", parts=[Part(text="hello")])], history=[sent])
        task.status.timestamp.GetCurrentTime()
        await self.tasks.save(task, self.context)
        await self.operations.finish(operation.key)

    async def step(self, first: int, count: int) -> float:
        """Write ``count`` messages; the CPU each cost, in microseconds."""
        started = time.process_time()
        for start in range(first, first + count, self.together):
            await asyncio.gather(*(self.message(n) for n in range(start, min(start + self.together, first + count))))
            if (start - first) % 512 < self.together:
                await self.operations.flush()  # the bridge's finish, every half second or so
        await self.operations.flush()
        cost = (time.process_time() - started) / count * 1e6
        self.costs.append(round(cost, 1))
        return cost


async def fill(args, workdir: Path) -> dict:
    stores = [Store(workdir / f"{ids}-{together}.sqlite3", ids, together)
              for ids in ("ordered", "random") for together in (args.concurrency, 1)]
    for store in stores:
        await store.open()
    steps = args.tasks // args.step
    for n in range(steps):
        for store in (stores if n % 2 == 0 else stores[::-1]):
            await store.step(n * args.step, args.step)
        print(f"  {(n + 1) * args.step:7d} tasks  " + "  ".join(f"{s.name} {s.costs[-1]:6.1f}" for s in stores)
              + "  us/message", flush=True)
    for store in stores:
        await store.db.aclose()
    late = {s.name: statistics.median(s.costs[steps // 2:]) for s in stores}
    ratios = {"random_grouped/ordered_grouped": late["random_grouped"] / late["ordered_grouped"],
              "random_one_by_one/ordered_one_by_one": late["random_one_by_one"] / late["ordered_one_by_one"],
              "ordered_one_by_one/ordered_grouped": late["ordered_one_by_one"] / late["ordered_grouped"],
              "random_one_by_one/ordered_grouped": late["random_one_by_one"] / late["ordered_grouped"]}
    ratios = {key: round(value, 3) for key, value in ratios.items()}
    print(f"  last {steps - steps // 2} steps, median us/message: "
          + ", ".join(f"{name} {cost:.1f}" for name, cost in late.items()))
    print(f"  ratios {ratios}")
    return {"tasks": args.tasks, "step": args.step, "concurrency": args.concurrency,
            "us_per_message_by_step": {s.name: s.costs for s in stores},
            "median_us_per_message_last_half": {name: round(cost, 1) for name, cost in late.items()},
            "ratios": ratios}


def bench_writes(args, workdir: Path, persona: Path) -> dict:
    print(f"\n== a message's writes on the SQLite store, up to {args.tasks} tasks in steps of {args.step}, "
          f"{args.concurrency} messages at a time where grouped", flush=True)
    return asyncio.run(fill(args, workdir))


def main() -> None:
    parser = bench_arguments(__doc__, "12,000 tasks in steps of 3,000")
    parser.add_argument("--tasks", type=int, default=None, help="messages written to each store (60000)")
    parser.add_argument("--step", type=int, default=None, help="messages per step (6000)")
    parser.add_argument("--concurrency", type=int, default=16, help="messages at a time where grouped")
    args = parser.parse_args()
    args.tasks = args.tasks or (12000 if args.quick else 60000)
    args.step = args.step or (3000 if args.quick else 6000)
    run_benchmark("writes", args, bench_writes)


if __name__ == "__main__":
    main()
