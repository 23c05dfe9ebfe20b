#!/usr/bin/env python3
"""Client benchmarks: A2AClient against the bare a2a-sdk client, side by side in one run.

    python bench/bench_client.py [--turns 300] [--fresh 7] [--json bench/results/client.json]

Starts the scripted test agent (test/support/a2a_agent.py) on loopback and measures, interleaving
the two sides so a noisy machine hurts both alike:

1. per-turn latency of ``send_task`` vs a bare SDK ``send_message`` (same agent, same
   conversation continuation), medians and p90, and their ratio;
2. the first answer of a fresh process (import + card + first turn) vs the bare SDK;
3. time to the first sentence of a stream (``A2AChatEngine.stream_sentences``) vs the
   time the bare SDK client receives the event that carries it;
4. cost of ``import ovos_a2a_solver`` (time and RSS over a bare interpreter);
5. card fetches per 100 turns.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from benchlib import SdkClientThread, median_p90, use_test_helpers, user_message, write_json

use_test_helpers()
from support.agent_process import AgentProcess  # noqa: E402


# ---- 1. per-turn latency ------------------------------------------------------------

class BareSdk(SdkClientThread):
    """The baseline: one a2a-sdk client, used as its docs show, on its own loop thread,
    continuing one conversation."""

    def __init__(self, url: str, streaming: bool = False) -> None:
        super().__init__(url, streaming=streaming, timeout=60)
        self.context_id = ""

    def send(self, text: str) -> str:
        """One turn of the conversation; the answer's text."""
        from a2a.helpers import get_artifact_text

        async def turn():
            async for event in self.client.send_message(user_message(text, self.context_id)):
                self.context_id = event.task.context_id
                return get_artifact_text(event.task.artifacts[0])

        return self.run(turn())


def per_turn(agent: AgentProcess, turns: int) -> dict:
    from ovos_a2a_solver import A2AClient

    url = agent.agent("echo")
    bare = BareSdk(url)
    ours = A2AClient(url)
    for _ in range(20):  # warm both up
        bare.send("warm"), ours.send_task("warm", session_id="bench")
    t_bare, t_ours = [], []
    for n in range(turns):
        for side in ((0, 1) if n % 2 else (1, 0)):
            start = time.perf_counter()
            if side:
                ours.send_task(f"turn {n}", session_id="bench")
                t_ours.append(time.perf_counter() - start)
            else:
                bare.send(f"turn {n}")
                t_bare.append(time.perf_counter() - start)
    fetches, total_turns = ours.card_fetches, turns + 20
    ours.close()
    result = {"bare_sdk": median_p90(t_bare), "a2a_client": median_p90(t_ours)}
    result["ratio_median"] = result["a2a_client"]["median_ms"] / result["bare_sdk"]["median_ms"]
    result["card_fetches"] = {"turns": total_turns, "fetches": fetches}
    return result


# ---- 2. fresh process --------------------------------------------------------------

FRESH_OURS = """
import time, sys; t = time.perf_counter()
from ovos_a2a_solver import A2AClient
with A2AClient(sys.argv[1]) as c: c.send_task("hello")
print(time.perf_counter() - t)
"""
FRESH_BARE = """
import time, sys, asyncio, uuid; t = time.perf_counter()
import httpx
from a2a.client import ClientConfig, create_client
from a2a.types import Message, Part, Role, SendMessageRequest
async def main():
    async with httpx.AsyncClient(timeout=60) as hc:
        client = await create_client(sys.argv[1], client_config=ClientConfig(streaming=False, httpx_client=hc))
        msg = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text="hello")])
        async for _ in client.send_message(SendMessageRequest(message=msg)): pass
asyncio.run(main())
print(time.perf_counter() - t)
"""


def fresh_process(agent: AgentProcess, runs: int) -> dict:
    url = agent.agent("echo")
    t_bare, t_ours = [], []
    for n in range(runs):
        for code, out in ((FRESH_OURS, t_ours), (FRESH_BARE, t_bare))[:: 1 if n % 2 else -1]:
            res = subprocess.run([sys.executable, "-c", code, url], capture_output=True, text=True, check=True)
            out.append(float(res.stdout.strip().splitlines()[-1]))
    result = {"bare_sdk": median_p90(t_bare), "a2a_client": median_p90(t_ours)}
    result["ratio_median"] = result["a2a_client"]["median_ms"] / result["bare_sdk"]["median_ms"]
    return result


# ---- 3. first sentence of a stream ---------------------------------------------------

def first_sentence(agent: AgentProcess, runs: int) -> dict:
    from ovos_a2a_solver import A2AChatEngine
    from ovos_plugin_manager.templates.agents import AgentMessage, MessageRole

    url = agent.agent("stream-gated")
    engine = A2AChatEngine({"agent_url": url, "streaming": True, "persist_conversations": False})
    bare = BareSdk(url, streaming=True)
    t_bare, t_ours = [], []

    async def bare_first_text():
        request = user_message("go")
        start = time.perf_counter()
        async for event in bare.client.send_message(request):
            if event.WhichOneof("payload") == "artifact_update":
                return time.perf_counter() - start

    for n in range(runs):
        start = time.perf_counter()
        sentences = engine.stream_sentences([AgentMessage(role=MessageRole.USER, content="go")])
        next(sentences)
        t_ours.append(time.perf_counter() - start)
        agent.release()
        list(sentences)
        t_bare.append(bare.run(bare_first_text()))
        agent.release()
        time.sleep(0.05)
    engine.shutdown()
    result = {"bare_sdk_first_artifact_event": median_p90(t_bare), "engine_first_sentence": median_p90(t_ours)}
    result["extra_ms_median"] = result["engine_first_sentence"]["median_ms"] - \
        result["bare_sdk_first_artifact_event"]["median_ms"]
    return result


# ---- 4. import cost ----------------------------------------------------------------

IMPORT_PROBE = """
import sys, time
def rss():
    for line in open('/proc/self/status'):
        if line.startswith('VmRSS'): return int(line.split()[1])
r0 = rss(); t = time.perf_counter()
if sys.argv[1]: __import__(sys.argv[1])
print(time.perf_counter() - t, rss() - r0)
"""


def import_cost(runs: int) -> dict:
    res = {}
    for module in ("ovos_a2a_solver", "ovos_a2a_solver.engine", "a2a.client"):
        times, mem = [], []
        for _ in range(runs):
            out = subprocess.run([sys.executable, "-c", IMPORT_PROBE, module], capture_output=True,
                                 text=True, check=True).stdout.split()
            times.append(float(out[0]))
            mem.append(int(out[1]))
        res[module] = {"median_ms": statistics.median(times) * 1000, "rss_kib_median": statistics.median(mem)}
    return res


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--fresh", type=int, default=7)
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    with AgentProcess() as agent:
        results = {
            "per_turn": per_turn(agent, args.turns),
            "fresh_process": fresh_process(agent, args.fresh),
            "first_sentence": first_sentence(agent, 15),
            "import": import_cost(args.fresh),
        }
    print(json.dumps(results, indent=2))
    if args.json:
        write_json(args.json, results)


if __name__ == "__main__":
    main()
