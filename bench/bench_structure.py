"""Structured metadata: the bridge with its limit on values, side by side with it lifted, in one run.

    python bench/bench_structure.py [--rounds 2]

Eight callers at once each send ``rounds`` SendMessages whose metadata is 30,000 small
objects (about 780 KiB: the a2a-sdk walks each value on the event loop, ~20 µs apiece),
while a ninth asks for ``/health`` in a loop. Then the same with messages just within the
default limit (490 objects, ~990 values). Reported: the latency of ``/health`` (idle
first, then under the load), how long each large request took and what it was answered.

Two bridge processes (``--backend echo``, SQLite, ``--max-concurrent 8``): ``limited``
with the default ``OVOS_A2A_MAX_VALUES`` (1000), and ``lifted`` with it at its maximum
(1,000,000), which is how the bridge behaved before the limit. Results go to
``bench/results/bridge-structure.json``.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "test"))

from support.bridge_process import BridgeProcess  # noqa: E402

HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}
CALLERS = 8


def structured_send(objects: int) -> bytes:
    metadata = {f"item{n:05d}": {"n": n} for n in range(objects)}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "hi"}],
        "metadata": metadata}}}).encode()


def ms(seconds: list[float]) -> dict:
    ordered = sorted(seconds)
    return {"p50": round(statistics.median(ordered) * 1000, 1),
            "p99": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 1),
            "max": round(ordered[-1] * 1000, 1), "n": len(ordered)}


def health_latency(root: str, client: httpx.Client) -> float:
    started = time.perf_counter()
    client.get(root + "/health", timeout=120).raise_for_status()
    return time.perf_counter() - started


def under_load(bridge: BridgeProcess, objects: int, rounds: int) -> dict:
    bodies = [[structured_send(objects) for _ in range(rounds)] for _ in range(CALLERS)]  # built beforehand
    seconds: list[float] = []
    answers: dict[str, int] = {}

    def caller(mine: list[bytes]) -> None:
        with httpx.Client() as client:
            for body in mine:
                started = time.perf_counter()
                reply = client.post(bridge.url + "/", content=body, headers=HEADERS, timeout=300).json()
                seconds.append(time.perf_counter() - started)
                key = "result" if "result" in reply else str(reply["error"]["code"])
                answers[key] = answers.get(key, 0) + 1

    threads = [threading.Thread(target=caller, args=(mine,)) for mine in bodies]
    with httpx.Client() as client:
        idle = [health_latency(bridge.root, client) for _ in range(20)]
        for thread in threads:
            thread.start()
        loaded = []
        while any(thread.is_alive() for thread in threads):
            loaded.append(health_latency(bridge.root, client))
    for thread in threads:
        thread.join()
    return {"body_bytes": len(bodies[0][0]), "answers": answers, "request_ms": ms(seconds),
            "health_idle_ms": ms(idle), "health_under_load_ms": ms(loaded)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2, help="messages each caller sends")
    parser.add_argument("--out", default=str(HERE / "results" / "bridge-structure.json"))
    args = parser.parse_args()
    result: dict = {"command": "python bench/bench_structure.py " + " ".join(sys.argv[1:]),
                    "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count()},
                    "callers": CALLERS, "rounds": args.rounds}
    with BridgeProcess("--max-concurrent", str(CALLERS)) as limited, \
            BridgeProcess("--max-concurrent", str(CALLERS), env={"OVOS_A2A_MAX_VALUES": "1000000"}) as lifted:
        for label, objects in (("30000_objects", 30_000), ("490_objects", 490)):
            for name, bridge in (("limited", limited), ("lifted", lifted)):
                figures = under_load(bridge, objects, args.rounds)
                result.setdefault(label, {})[name] = figures
                print(label, name, json.dumps(figures), flush=True)
            pair = result[label]
            pair["ratio_lifted_to_limited"] = {
                "health_under_load_max": round(pair["lifted"]["health_under_load_ms"]["max"]
                                               / pair["limited"]["health_under_load_ms"]["max"], 1),
                "request_p50": round(pair["lifted"]["request_ms"]["p50"] / pair["limited"]["request_ms"]["p50"], 1)}
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print("written", args.out)


if __name__ == "__main__":
    main()
