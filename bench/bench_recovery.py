#!/usr/bin/env python3
"""Failure benchmarks of the client: what a turn costs while the circuit breaker is open,
and how long the plugin takes to answer again after its agent restarts.

    python bench/bench_recovery.py [--json bench/results/recovery.json]

1. **Breaker open.** An agent that is down makes ``breaker_threshold`` turns fail; the next
   turns fail at once with ``CircuitOpenError``. Measured: the time of such a turn, and the
   requests that reach the network meanwhile (counted by a TCP listener that takes the
   agent's port: it must see no connection).
2. **Recovery after a restart.** The agent (the scripted test agent) is stopped while a
   user keeps asking every ``--interval`` seconds, then started again on the same port.
   Measured: from the moment the restarted agent is ready to the first answer, for the
   plugin with the default cool-down, the plugin with a short one, and, side by side, a
   bare a2a-sdk client with the card it had (which has no breaker, so it is the floor).
"""
from __future__ import annotations

import argparse
import json
import socket
import statistics
import threading
import time
from pathlib import Path

from benchlib import REPO, SdkClientThread, use_test_helpers, user_message, write_json

use_test_helpers()
from support.agent_process import AgentProcess  # noqa: E402
from support.network import free_port  # noqa: E402
from ovos_a2a_solver._defaults import DEFAULT_BREAKER_COOLDOWN  # noqa: E402


class Listener:
    """Takes a port and counts the connections made to it (never answers)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(64)
        self.sock.settimeout(0.1)
        self.connections = 0
        self.running = True
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while self.running:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self.running = False
        self.thread.join()
        self.sock.close()


def breaker_open(turns: int) -> dict:
    from ovos_a2a_solver import A2AClient, BreakerPolicy, CircuitOpenError, RetryPolicy

    port = free_port()
    with AgentProcess(port=port) as agent:
        client = A2AClient(agent.agent("echo"), timeout=5, breaker=BreakerPolicy(threshold=3, cooldown=600),
                           retries=RetryPolicy(max_retries=0))
        client.send_task("warm up")
        normal = []
        for _ in range(turns):
            start = time.perf_counter()
            client.send_task("hello")
            normal.append(time.perf_counter() - start)
    listener = Listener(port)  # the agent is gone; its port now only counts connections
    try:
        failures = 0
        while True:
            try:
                client.send_task("hello")
            except CircuitOpenError:
                break
            except Exception:
                failures += 1
        before = listener.connections
        open_turns = []
        for _ in range(turns):
            start = time.perf_counter()
            try:
                client.send_task("hello")
            except CircuitOpenError:
                open_turns.append(time.perf_counter() - start)
        reached = listener.connections - before
    finally:
        listener.close()
        client.close()
    return {"failed_turns_before_open": failures, "turns_while_open": len(open_turns),
            "connections_while_open": reached,
            "open_turn_median_us": statistics.median(open_turns) * 1e6,
            "normal_turn_median_ms": statistics.median(normal) * 1e3}


def recovery(down_seconds: float, interval: float, cooldown: float | None) -> dict:
    """Seconds from the restarted agent being ready to the first answer."""
    from ovos_a2a_solver import A2AClient, BreakerPolicy

    port = free_port()
    agent = AgentProcess(port=port)
    breaker = BreakerPolicy(cooldown=cooldown) if cooldown is not None else BreakerPolicy()
    client = A2AClient(agent.agent("echo"), timeout=5, breaker=breaker)
    bare = BareClient(agent.agent("echo"))
    client.send_task("warm up")
    bare.ask("warm up")
    agent.stop()
    answered = {"plugin": None, "bare": None}
    stop_at = time.monotonic() + down_seconds + 120
    ready_at: list[float] = []

    def keep_asking(name, ask):
        while time.monotonic() < stop_at:
            try:
                ask("hello")
                if ready_at:
                    answered[name] = time.monotonic() - ready_at[0]
                    return
            except Exception:
                pass
            time.sleep(interval)

    threads = [threading.Thread(target=keep_asking, args=("plugin", lambda t: client.send_task(t))),
               threading.Thread(target=keep_asking, args=("bare", bare.ask))]
    for thread in threads:
        thread.start()
    time.sleep(down_seconds)
    agent = AgentProcess(port=port)
    ready_at.append(time.monotonic())
    for thread in threads:
        thread.join()
    agent.stop()
    client.close()
    bare.close()
    return {"cooldown_s": cooldown if cooldown is not None else f"default ({DEFAULT_BREAKER_COOLDOWN:g})", "down_s": down_seconds,
            "plugin_answer_after_restart_s": answered["plugin"], "bare_sdk_answer_after_restart_s": answered["bare"]}


class BareClient(SdkClientThread):
    """A bare a2a-sdk 1.3 client on its own loop thread, with the card it resolved first."""

    def __init__(self, url: str) -> None:
        super().__init__(url, streaming=False, timeout=5)

    def ask(self, text: str) -> None:
        """One turn; raises what the SDK raises."""
        async def go():
            async for _ in self.client.send_message(user_message(text)):
                pass

        self.run(go())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--down", type=float, default=3.0, help="seconds the agent is down")
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between the user's questions")
    parser.add_argument("--json", type=Path, default=REPO / "bench" / "results" / "recovery.json")
    args = parser.parse_args()
    results = {"breaker_open": breaker_open(args.turns),
               "recovery": [recovery(args.down, args.interval, cooldown) for cooldown in (None, 2.0)]}
    print(json.dumps(results, indent=2))
    write_json(args.json, results)


if __name__ == "__main__":
    main()
