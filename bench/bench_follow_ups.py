#!/usr/bin/env python3
# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Follow-ups with wrk as the load: messages that continue a task waiting for input, on the
echo bridge of this checkout beside that of another (``--baseline-code DIR``), in one run.

    python bench/bench_follow_ups.py --baseline-code DIR [--db URL] [--streaming] [--tasks 2048]
                                     [--seconds 10] [--concurrency 16] [--rounds 3] [--quick]
                                     [--json bench/results/follow-ups.json]

Each bridge first has ``--tasks`` tasks asked "ask:Which city?" (each then waits for input);
then each wrk request (C, two threads) continues one of them with "ask:And then?", so the task
waits again and takes the next follow-up: each thread goes round its own half of the tasks, a
task's next follow-up long after its last one ended. A follow-up counts when it ends
``input-required``. What it costs the task store is what this measures: the task a follow-up
continues is read by the request handler, the a2a-sdk's set-up, the request's context and the
SDK's producer, and saved when the SDK adds the message, at each artifact and at its end.

``--streaming``: SendStreamingMessage instead of SendMessage. ``--db URL``: each bridge on a new
PostgreSQL database beside the one of URL (dropped afterwards) instead of a SQLite file of its own.
Rounds alternate the order; medians, the ratio of this checkout's req/s to the baseline's, and
the median of that ratio within a round. The results are recorded under the key ``follow-ups``.
"""
from __future__ import annotations

import asyncio
import json
import os
import uuid
from pathlib import Path

import httpx

from benchlib import (HEADERS, add_round_arguments, bench_arguments, resolve_round_arguments, run_benchmark,
                      wrk_rounds, wrk_script)
from bench_replicas import Databases, echo_bridge

#: wrk's requests: follow-ups to the tasks TASK_IDS (a Lua table), thread ``tid`` going round its
#: own half of them
FOLLOW_UPS = r"""
local ids = TASK_IDS
function request()
  n = n + 1
  local id = ids[((n - 1) % math.floor(#ids / 2)) * 2 + tid]
  local body = '{"jsonrpc":"2.0","id":' .. n .. ',"method":"METHOD","params":{"message":' ..
    '{"messageId":"wrk-RUN-' .. tid .. '-' .. n .. '","taskId":"' .. id ..
    '","role":"ROLE_USER","parts":[{"text":"ask:And then?"}]}}}'
  return wrk.format("POST", nil, {["Content-Type"] = "application/json", ["A2A-Version"] = "1.0",
                                  ["Accept"] = "ACCEPT"}, body)
end
"""


async def tasks_waiting(url: str, count: int, at_once: int = 32) -> list[str]:
    """The ids of ``count`` new tasks of the bridge at ``url``, each waiting for input."""
    made: list[str] = []
    async with httpx.AsyncClient(timeout=60, headers=HEADERS) as client:
        async def ask(n: int) -> None:
            body = {"jsonrpc": "2.0", "id": n, "method": "SendMessage", "params": {"message": {
                "role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": [{"text": "ask:Which city?"}]}}}
            task = (await client.post(url, content=json.dumps(body))).json()["result"]["task"]
            assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", task
            made.append(task["id"])

        for start in range(0, count, at_once):
            await asyncio.gather(*(ask(n) for n in range(start, min(start + at_once, count))))
    return made


def follow_ups_script(task_ids: list[str], streaming: bool) -> str:
    """The wrk script of :data:`FOLLOW_UPS` for ``task_ids``: one is done when its task waits again."""
    requests = (FOLLOW_UPS.replace("TASK_IDS", "{" + ",".join(f'"{task_id}"' for task_id in task_ids) + "}")
                .replace("METHOD", "SendStreamingMessage" if streaming else "SendMessage")
                .replace("ACCEPT", "text/event-stream" if streaming else "application/json"))
    return wrk_script(requests, "TASK_STATE_INPUT_REQUIRED")


def bench_follow_ups(args, workdir: Path, _persona: Path) -> dict:
    kind = "SendStreamingMessage" if args.streaming else "SendMessage"
    print(f"\n== follow-ups ({kind}) with wrk: {args.concurrency} connections, {args.rounds} rounds x "
          f"{args.seconds:g} s, {args.tasks} tasks waiting for input, on "
          f"{'PostgreSQL' if args.db else 'SQLite'}", flush=True)
    databases = Databases(args.db) if args.db else None
    try:
        servers = [echo_bridge(workdir, name, databases.new() if databases else None, code=code)
                   for name, code in (("bridge_echo", None), ("bridge_echo_baseline", args.baseline_code))]
        return wrk_rounds(servers, workdir, args.concurrency, args.seconds, args.rounds, False,
                          [("bridge_echo", "bridge_echo_baseline")],
                          lua_for=lambda server: follow_ups_script(
                              asyncio.run(tasks_waiting(server.rpc_url, args.tasks)), args.streaming))
    finally:
        if databases is not None:
            databases.drop_all()


def main() -> None:
    parser = bench_arguments(__doc__, "2 rounds x 3 s")
    add_round_arguments(parser)
    parser.add_argument("--baseline-code", required=True, metavar="DIR",
                        help="the checkout whose echo bridge runs beside this one's (its root)")
    parser.add_argument("--db", default="", metavar="URL",
                        help="a PostgreSQL database URL: each bridge on a new database beside it (default: SQLite)")
    parser.add_argument("--streaming", action="store_true", help="SendStreamingMessage instead of SendMessage")
    parser.add_argument("--tasks", type=int, default=2048, help="tasks waiting for input, per bridge")
    args = parser.parse_args()
    resolve_round_arguments(args)
    args.baseline_code = os.path.abspath(args.baseline_code)
    run_benchmark("follow-ups", args, bench_follow_ups)


if __name__ == "__main__":
    main()
