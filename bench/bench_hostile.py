"""Hostile input: the bridge side by side with a bare a2a-sdk agent, in the same run.

    python bench/bench_hostile.py [--seeds 1 2 3] [--count 2000] [--big 10]

1. Malformed requests: ``count`` seeded malformed requests per seed (``test/support/malformed.py``:
   wrong JSON types, unknown enum names and numbers, messages not from the user, empty or
   too many parts, invalid UTF-8, nesting 1000 deep, a 5000-digit id ...) over JSON-RPC
   and HTTP+JSON. Counted: refused (a protocol error), internal (-32603 or HTTP 5xx) and
   accepted (a result for a request that must be refused).
2. A maximal body: a 1 MB SendMessage of 69,000 parts sent ``big`` times in a row while
   a second client keeps asking for the agent card and sending a one-word message. Reported:
   how long each large request took, and the latency of the small requests meanwhile.

Both servers run as subprocesses on loopback: the bridge (``--backend echo``, SQLite) and
the bare a2a-sdk echo agent of the test suite (``test/support/a2a_agent.py``, InMemoryTaskStore).
Results go to ``bench/results/bridge-hostile.json``.
"""
from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
import threading
import time
import uuid

import httpx

from benchlib import REPO, machine_brief, use_test_helpers, write_json

use_test_helpers()
from support.agent_process import AgentProcess  # noqa: E402
from support.bridge_process import BridgeProcess  # noqa: E402
from support.malformed import judge, malformed_requests  # noqa: E402

V1 = {"A2A-Version": "1.0", "Content-Type": "application/json"}


def malformed_counts(url: str, seed: int, count: int) -> dict:
    tally: collections.Counter = collections.Counter()
    with httpx.Client() as client:
        for case in malformed_requests(seed, count):
            tally[judge(case, case.send(url, client))] += 1
    return {"refused": tally["refused"], "internal": tally["internal"], "accepted": tally["accepted"]}


def big_body() -> bytes:
    parts = [{"text": "x"}] * 69_000
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                       "params": {"message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER",
                                              "parts": parts}}}).encode()


def small_send(url: str, client: httpx.Client) -> None:
    body = {"jsonrpc": "2.0", "id": 2, "method": "SendMessage",
            "params": {"message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "hi"}]}}}
    client.post(url + "/", json=body, headers=V1, timeout=60).raise_for_status()


def under_a_maximal_body(url: str, card_url: str, times: int) -> dict:
    body = big_body()
    big_seconds: list[float] = []
    card, send = [], []
    done = threading.Event()

    def big() -> None:
        with httpx.Client() as client:
            for _ in range(times):
                started = time.perf_counter()
                client.post(url + "/", content=body, headers=V1, timeout=120)
                big_seconds.append(time.perf_counter() - started)
        done.set()

    sender = threading.Thread(target=big)
    sender.start()
    with httpx.Client() as client:
        while not done.is_set():
            started = time.perf_counter()
            client.get(card_url, timeout=60).raise_for_status()
            card.append(time.perf_counter() - started)
            started = time.perf_counter()
            small_send(url, client)
            send.append(time.perf_counter() - started)
    sender.join()
    ms = lambda xs: {"p50": round(statistics.median(xs) * 1000, 1), "max": round(max(xs) * 1000, 1), "n": len(xs)}
    return {"body_bytes": len(body), "large_request_ms": ms(big_seconds), "card_ms": ms(card), "small_send_ms": ms(send)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--big", type=int, default=10, help="how many maximal bodies to send")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "bridge-hostile.json"))
    args = parser.parse_args()
    result: dict = {"command": "python bench/bench_hostile.py " + " ".join(sys.argv[1:]),
                    "machine": machine_brief(),
                    "malformed": {}, "maximal_body": {}}
    with AgentProcess() as agent, BridgeProcess("--max-concurrent", "8") as bridge:
        servers = {"bridge": (bridge.url, bridge.card_url),
                   "bare_sdk": (agent.agent("echo"), agent.agent("echo") + "/.well-known/agent-card.json")}
        for seed in args.seeds:
            for name, (url, _) in servers.items():  # alternate: the same load on both, in turn
                result["malformed"].setdefault(name, {})[str(seed)] = malformed_counts(url, seed, args.count)
                print(name, "seed", seed, result["malformed"][name][str(seed)], flush=True)
        for name, (url, card_url) in servers.items():
            result["maximal_body"][name] = under_a_maximal_body(url, card_url, args.big)
            print(name, result["maximal_body"][name], flush=True)
    write_json(args.out, result)
    print("written", args.out)


if __name__ == "__main__":
    main()
