#!/usr/bin/env python3
"""Push delivery latency: the bridge beside a bare a2a-sdk agent with the SDK's own push sender.

    python bench/bench_push.py [--messages 100] [--json bench/results/push.json]

One webhook receiver on loopback (allowed on the bridge with ``OVOS_A2A_PUSH_ALLOW``).
Each side gets the same blocking ``SendMessage`` (echo, a push config naming the
receiver), alternately, so a noisy machine hurts both alike. Measured per message: from
sending it to the webhook receiving the ``completed`` event, and from the blocking answer
to that event (negative: the event came first). The bridge queues deliveries per webhook,
in order, with retries; the SDK's sender posts each event as it is processed.
"""
from __future__ import annotations

import argparse
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from benchlib import REPO, median_p90, use_test_helpers, write_json

use_test_helpers()
from support.agent_process import AgentProcess  # noqa: E402
from support.bridge_process import BridgeProcess  # noqa: E402

HEADERS = {"A2A-Version": "1.0"}


class Receiver:
    """Records when each task's completed event arrives."""

    def __init__(self) -> None:
        self.completed: dict[str, float] = {}
        self.arrived = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                now = time.perf_counter()
                self.send_response(200)
                self.end_headers()
                task = body.get("task") or {}
                update = body.get("statusUpdate") or {}
                state = (task.get("status") or update.get("status") or {}).get("state")
                if state == "TASK_STATE_COMPLETED":
                    with receiver.arrived:
                        receiver.completed.setdefault(task.get("id") or update.get("taskId"), now)
                        receiver.arrived.notify_all()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, task_id: str, timeout: float = 30) -> float:
        with self.arrived:
            if not self.arrived.wait_for(lambda: task_id in self.completed, timeout):
                raise RuntimeError(f"no completed event for task {task_id} within {timeout} s")
            return self.completed[task_id]


def one(http: httpx.Client, url: str, receiver: Receiver) -> tuple[float, float]:
    params = {"message": {"role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": [{"text": "hello"}]},
              "configuration": {"taskPushNotificationConfig": {"url": receiver.url, "token": "t"}}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
    start = time.perf_counter()
    reply = http.post(url, json=body, headers=HEADERS).json()
    answered = time.perf_counter()
    task = reply["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", reply
    pushed = receiver.wait(task["id"])
    return pushed - start, pushed - answered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--json", type=Path, default=REPO / "bench" / "results" / "push.json")
    args = parser.parse_args()
    receiver = Receiver()
    sides = {"bridge": [], "bare_sdk": []}
    after = {"bridge": [], "bare_sdk": []}
    with BridgeProcess(env={"OVOS_A2A_PUSH_ALLOW": "127.0.0.1"}) as bridge, \
            AgentProcess() as agent, httpx.Client(timeout=30) as http:
        urls = {"bridge": bridge.url + "/", "bare_sdk": agent.agent("push") + "/"}
        for name, url in urls.items():  # warm up
            for _ in range(5):
                one(http, url, receiver)
        for _ in range(args.messages):
            for name, url in urls.items():
                total, since_answer = one(http, url, receiver)
                sides[name].append(total)
                after[name].append(since_answer)
    results = {"command": f"python bench/bench_push.py --messages {args.messages}",
               "send_to_completed_event": {k: median_p90(v) for k, v in sides.items()},
               "answer_to_completed_event": {k: median_p90(v) for k, v in after.items()}}
    results["ratio_send_to_event_median"] = (results["send_to_completed_event"]["bridge"]["median_ms"]
                                             / results["send_to_completed_event"]["bare_sdk"]["median_ms"])
    print(json.dumps(results, indent=2))
    write_json(args.json, results)


if __name__ == "__main__":
    main()
