#!/usr/bin/env python3
# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Follow-ups: messages that continue a task waiting for input, on the echo bridge of this
checkout beside that of another (``--baseline-code DIR``), in one run.

    python bench/bench_follow_ups.py --baseline-code DIR [--db URL] [--streaming] [--tasks 2048]
                                     [--seconds 10] [--concurrency 16] [--rounds 3] [--quick]
                                     [--instructions [--small 50 --large 250]]
                                     [--json bench/results/follow-ups.json]

With wrk as the load (the default): each bridge first has ``--tasks`` tasks asked "ask:Which
city?" (each then waits for input); then each wrk request (C, two threads) continues one of
them with "ask:And then?", so the task waits again and takes the next follow-up: each thread
goes round its own half of the tasks, a task's next follow-up long after its last one ended. A
follow-up counts when it ends ``input-required``. Rounds alternate the order; medians, the ratio
of this checkout's req/s to the baseline's, the median of that ratio within a round, and the
CPU per follow-up of each bridge (and of its PostgreSQL processes).

``--instructions``: the CPU work of a follow-up counted in instructions (valgrind's callgrind,
``apt-get install valgrind``) instead of timed, so that the machine's load does not move it:
each code's bridge in a Python process of its own, under callgrind, asked ``--small`` and then,
in another process, ``--large`` follow-ups (eight at a time, round 64 tasks) through its ASGI
app, the client in the same process (no server, no network); the difference of the two counts
over the difference of follow-ups is one follow-up's, the client's share included.

What it costs the task store is what this measures: the task a follow-up continues was read by
the request handler, the a2a-sdk's set-up, the request's context and the SDK's producer, and
saved when the SDK added the message, at each artifact and at its end.
``--streaming``: SendStreamingMessage instead of SendMessage. ``--db URL``: each bridge on a new
PostgreSQL database beside the one of URL (dropped afterwards) instead of a SQLite file of its own.
The results are recorded under the key ``follow-ups``.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from benchlib import (CODE_ENV, HEADERS, PY, add_round_arguments, bench_arguments, resolve_round_arguments,
                      run_benchmark, use_test_helpers, wrk_rounds, wrk_script)
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


def send_body(text: str, task_id: str = "", streaming: bool = False) -> dict:
    """A JSON-RPC SendMessage (or SendStreamingMessage) of ``text``, continuing ``task_id`` if given."""
    message = {"role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": [{"text": text}]}
    if task_id:
        message["taskId"] = task_id
    return {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage" if streaming else "SendMessage",
            "params": {"message": message}}


async def tasks_waiting(client: httpx.AsyncClient, url: str, count: int, at_once: int = 32) -> list[str]:
    """The ids of ``count`` new tasks of the bridge at ``url``, each waiting for input."""
    made: list[str] = []

    async def ask() -> None:
        task = (await client.post(url, json=send_body("ask:Which city?"), headers=HEADERS)).json()["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", task
        made.append(task["id"])

    for start in range(0, count, at_once):
        await asyncio.gather(*(ask() for _ in range(start, min(start + at_once, count))))
    return made


async def tasks_waiting_at(url: str, count: int) -> list[str]:
    async with httpx.AsyncClient(timeout=60) as client:
        return await tasks_waiting(client, url, count)


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
                              asyncio.run(tasks_waiting_at(server.rpc_url, args.tasks)), args.streaming))
    finally:
        if databases is not None:
            databases.drop_all()


async def follow_ups_in_process(count: int, db: str | None, streaming: bool, tasks: int = 64,
                                at_once: int = 8) -> None:
    """``count`` follow-ups (``at_once`` at a time, round ``tasks`` tasks) to an echo bridge in
    this process, through its ASGI app (the ``ovos_a2a_solver`` this process imports)."""
    use_test_helpers()
    from support.asgi_lifespan import lifespan

    from ovos_a2a_solver.bridge.app import Bridge
    from ovos_a2a_solver.bridge.backends.echo import EchoBackend
    from ovos_a2a_solver.bridge.config import BridgeSettings

    values = {"backend": "echo", "state_dir": tempfile.mkdtemp(prefix="bench-follow-ups-"), "port": 0,
              "max_concurrent": 64, "replica_lease": 600, **({"db": db} if db else {})}
    bridge = Bridge(BridgeSettings.load(values, env={}), EchoBackend())
    async with lifespan(bridge.app), httpx.AsyncClient(transport=httpx.ASGITransport(app=bridge.app),
                                                       base_url="http://bridge.bench", timeout=60) as client:
        task_ids = await tasks_waiting(client, "/a2a/", tasks, at_once)

        async def follow_up(n: int) -> None:
            body = send_body("ask:And then?", task_ids[n % tasks], streaming)
            async with client.stream("POST", "/a2a/", json=body, headers={
                    **HEADERS, "Accept": "text/event-stream" if streaming else "application/json"}) as response:
                answer = b"".join([chunk async for chunk in response.aiter_bytes()])
            assert b"TASK_STATE_INPUT_REQUIRED" in answer, answer[-300:]

        async def one_at_a_time(first: int) -> None:
            for n in range(first, count, at_once):
                await follow_up(n)

        await asyncio.gather(*(one_at_a_time(first) for first in range(at_once)))


def instructions(code: str | None, count: int, db: str | None, streaming: bool) -> int:
    """The instructions a Python process running :func:`follow_ups_in_process` executed, counted
    by callgrind, with the ``ovos_a2a_solver`` of ``code`` (this run's snapshot when None)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **CODE_ENV, **({"PYTHONPATH": code} if code else {})}
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", PY, str(Path(__file__).resolve()),
               "--in-process", str(count), "--db", db or "", *(["--streaming"] if streaming else [])]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3600)
    collected = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode or collected is None:
        raise RuntimeError(f"the follow-ups under callgrind failed: {done.stderr[-1500:]}")
    return int(collected.group(1))


def bench_instructions(args, _workdir: Path, _persona: Path) -> dict:
    kind = "SendStreamingMessage" if args.streaming else "SendMessage"
    print(f"\n== follow-ups ({kind}) counted in instructions: {args.small} and {args.large} follow-ups, in a "
          f"process of their own each, on {'PostgreSQL' if args.db else 'SQLite'}", flush=True)
    databases = Databases(args.db) if args.db else None
    codes = {"bridge_echo": None, "bridge_echo_baseline": args.baseline_code}
    runs = [(name, count) for name in codes for count in (args.small, args.large)]
    try:
        with ThreadPoolExecutor(2) as pool:  # two at a time: callgrind runs a process on one core
            counted = list(pool.map(lambda run: instructions(codes[run[0]], run[1],
                                                             databases.new() if databases else None,
                                                             args.streaming), runs))
    finally:
        if databases is not None:
            databases.drop_all()
    result: dict = {"load": "in process, under callgrind", "small": args.small, "large": args.large,
                    "streaming": args.streaming, "servers": {}}
    for (name, count), total in zip(runs, counted):
        result["servers"].setdefault(name, {})[f"instructions_{count}"] = total
    for name, entry in result["servers"].items():
        entry["instructions_per_follow_up"] = round((entry[f"instructions_{args.large}"]
                                                     - entry[f"instructions_{args.small}"])
                                                    / (args.large - args.small))
        print(f"  {name:21s} {entry['instructions_per_follow_up'] / 1e6:7.3f} million instructions a follow-up",
              flush=True)
    per = {name: entry["instructions_per_follow_up"] for name, entry in result["servers"].items()}
    result["ratio"] = {"bridge_echo/bridge_echo_baseline": round(per["bridge_echo"] / per["bridge_echo_baseline"],
                                                                3)}
    print(f"  ratio {result['ratio']}", flush=True)
    return result


def main() -> None:
    parser = bench_arguments(__doc__, "2 rounds x 3 s")
    add_round_arguments(parser)
    parser.add_argument("--baseline-code", default="", metavar="DIR",
                        help="the checkout whose echo bridge runs beside this one's (its root)")
    parser.add_argument("--db", default="", metavar="URL",
                        help="a PostgreSQL database URL: each bridge on a new database beside it (default: SQLite)")
    parser.add_argument("--streaming", action="store_true", help="SendStreamingMessage instead of SendMessage")
    parser.add_argument("--tasks", type=int, default=2048, help="tasks waiting for input, per bridge")
    parser.add_argument("--instructions", action="store_true",
                        help="count each follow-up's instructions under callgrind instead of timing wrk's")
    parser.add_argument("--small", type=int, default=50, help="with --instructions: follow-ups of the first count")
    parser.add_argument("--large", type=int, default=250, help="with --instructions: follow-ups of the second")
    parser.add_argument("--in-process", type=int, default=0, help=argparse.SUPPRESS)
    if "--in-process" in sys.argv:  # one count under callgrind (see ``instructions``)
        args, _ = parser.parse_known_args()
        asyncio.run(follow_ups_in_process(args.in_process, args.db or None, args.streaming))
        return
    args = parser.parse_args()
    if not args.baseline_code:
        parser.error("--baseline-code DIR is needed: the checkout measured beside this one")
    resolve_round_arguments(args)
    args.baseline_code = os.path.abspath(args.baseline_code)
    print("baseline: the checkout at " + args.baseline_code + ", commit " + subprocess.run(
        ["git", "-C", args.baseline_code, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip())
    run_benchmark("follow-ups", args, bench_instructions if args.instructions else bench_follow_ups)


if __name__ == "__main__":
    main()
