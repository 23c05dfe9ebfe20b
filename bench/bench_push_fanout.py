#!/usr/bin/env python3
# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Push fan-out: how responsive a server stays while one task's event goes to many webhooks.

    python bench/bench_push_fanout.py [--webhooks 300] [--baseline-code DIR] [--json bench/results/push-fanout.json]

One task gets ``--webhooks`` push configs (on 3 quick receivers on loopback), then one event
that reaches all of them. Meanwhile the server is probed every 10 ms (the bridge's ``/health``,
which reads its database; the bare agent's card, as it has no health endpoint); measured:
the slowest, the 99th percentile and the median probe (the server's stalls) and the time
until every webhook got the ``completed`` event. Sides, in one run: the bridge (this code,
its push limits raised to ``--webhooks``), the bridge from ``--baseline-code`` (a source tree,
e.g. ``git archive <commit> | tar -x -C DIR``) if given, and a bare a2a-sdk agent with the
SDK's own push sender.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "test"))

from support.agent_process import AgentProcess  # noqa: E402
from support.bridge_process import BridgeProcess  # noqa: E402
from support.webhooks import Webhook, quick  # noqa: E402

HEADERS = {"A2A-Version": "1.0"}


def rpc(http: httpx.Client, url: str, method: str, params: dict) -> dict:
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}
    answer = http.post(url + "/", json=body, headers=HEADERS).json()
    assert "result" in answer, answer
    return answer["result"]


def message(text: str, **ids: str) -> dict:
    return {"role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": [{"text": text}], **ids}


def fan_out(url: str, probe_url: str, webhooks: int, receivers: list[Webhook], bridge: bool) -> dict:
    """Register ``webhooks`` configs on one task, send the event that reaches them, probe ``probe_url``."""
    with httpx.Client(timeout=60) as http:
        if bridge:  # a task waiting for input; its follow-up's events fan out
            task = rpc(http, url, "SendMessage", {"message": message("ask:which city?")})["task"]
        else:  # a task that works 5 s; its completion fans out
            task = rpc(http, url, "SendMessage", {"message": message("sleep:5"),
                                                  "configuration": {"returnImmediately": True}})["task"]
        for i in range(webhooks):
            rpc(http, url, "CreateTaskPushNotificationConfig",
                {"taskId": task["id"], "id": f"w{i}", "url": f"{receivers[i % len(receivers)].url}?{i}"})
        already = sum(r.completed_bodies for r in receivers)
        if bridge:
            rpc(http, url, "SendMessage", {"message": message("Paris", taskId=task["id"], contextId=task["contextId"]),
                                           "configuration": {"returnImmediately": True}})
        start = time.perf_counter()
        probes, deadline, delivered_in = [], time.monotonic() + 120, None
        while time.monotonic() < deadline:
            begun = time.perf_counter()
            http.get(probe_url).raise_for_status()
            probes.append(time.perf_counter() - begun)
            if sum(r.completed_bodies for r in receivers) - already >= webhooks:
                delivered_in = time.perf_counter() - start
                break
            time.sleep(0.01)
    ordered = sorted(probes)
    return {"webhooks": webhooks, "all_delivered_s": delivered_in,
            "delivered": sum(r.completed_bodies for r in receivers) - already,
            "probe_max_ms": ordered[-1] * 1e3, "probe_p99_ms": ordered[int(len(ordered) * 0.99) - 1] * 1e3,
            "probe_median_ms": statistics.median(ordered) * 1e3, "probes": len(ordered)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--webhooks", type=int, default=300)
    parser.add_argument("--baseline-code", type=Path, help="a source tree of the bridge to compare with")
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "push-fanout.json")
    args = parser.parse_args()
    receivers = [Webhook(quick) for _ in range(3)]
    limits = {"OVOS_A2A_PUSH_ALLOW": "127.0.0.1", "OVOS_A2A_PUSH_CONFIGS_PER_TASK": str(args.webhooks),
              "OVOS_A2A_PUSH_CONFIGS_PER_OWNER": str(args.webhooks)}
    results: dict = {"command": " ".join(["python bench/bench_push_fanout.py", f"--webhooks {args.webhooks}"]
                                         + ([f"--baseline-code {args.baseline_code}"] if args.baseline_code else []))}
    try:
        with BridgeProcess(env=limits) as bridge:
            results["bridge"] = fan_out(bridge.url, bridge.root + "/health", args.webhooks, receivers, bridge=True)
        if args.baseline_code:
            path = os.pathsep.join(filter(None, [str(args.baseline_code.resolve()), os.environ.get("PYTHONPATH")]))
            with BridgeProcess(env={**limits, "PYTHONPATH": path}) as baseline:
                results["bridge_baseline"] = fan_out(baseline.url, baseline.root + "/health", args.webhooks, receivers,
                                                     bridge=True)
        with AgentProcess() as agent:
            url = agent.agent("push")
            results["bare_sdk"] = fan_out(url, url + "/.well-known/agent-card.json", args.webhooks, receivers,
                                          bridge=False)
    finally:
        for receiver in receivers:
            receiver.close()
    for other in ("bridge_baseline", "bare_sdk"):
        if other in results:
            results[f"ratio_probe_max_bridge_to_{other}"] = (results["bridge"]["probe_max_ms"]
                                                                  / results[other]["probe_max_ms"])
    print(json.dumps(results, indent=2))
    args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
