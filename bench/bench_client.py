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

``--baseline-code DIR``: also this package's ``A2AClient`` against that of another checkout
(``DIR``, its root), each in a worker process of its own that times its turns, interleaved
turn by turn against the same agent, with the ratio of this one's median to the baseline's,
and the import cost of each: a change measured before and after in one run.
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


# ---- before and after: another checkout's client, side by side ------------------------

TURN_WORKER = """
import sys, time
from ovos_a2a_solver import A2AClient
client = A2AClient(sys.argv[1])
for _ in range(20):
    client.send_task("warm", session_id="bench")
print("ready", flush=True)
for line in sys.stdin:
    start = time.perf_counter()
    client.send_task(line.strip(), session_id="bench")
    print(time.perf_counter() - start, flush=True)
client.close()
"""


def code_env(root: str) -> dict:
    """The environment of a process that imports the package from the checkout at ``root``."""
    import os

    return {**os.environ, "PYTHONPATH": str(root)}


def against_baseline(agent: AgentProcess, baseline: str, turns: int, runs: int) -> dict:
    from pathlib import Path

    url = agent.agent("echo")
    roots = {"this_code": str(Path(__file__).resolve().parents[1]), "baseline_code": str(Path(baseline).resolve())}
    workers = {name: subprocess.Popen([sys.executable, "-c", TURN_WORKER, url], env=code_env(root), text=True,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE)
               for name, root in roots.items()}
    samples: dict[str, list[float]] = {name: [] for name in workers}
    try:
        for worker in workers.values():
            if worker.stdout.readline().strip() != "ready":
                raise SystemExit("a client worker did not start")
        for n in range(turns):
            for name in (list(workers) if n % 2 else list(workers)[::-1]):
                workers[name].stdin.write(f"turn {n}\n")
                workers[name].stdin.flush()
                samples[name].append(float(workers[name].stdout.readline()))
    finally:
        for worker in workers.values():
            worker.stdin.close()
            worker.wait(timeout=30)
    result = {name: median_p90(times) for name, times in samples.items()}
    result["ratio_median"] = result["this_code"]["median_ms"] / result["baseline_code"]["median_ms"]
    imports = {}
    for name, root in roots.items():
        times = []
        for _ in range(runs):
            out = subprocess.run([sys.executable, "-c", IMPORT_PROBE, "ovos_a2a_solver"], capture_output=True,
                                 text=True, check=True, env=code_env(root)).stdout.split()
            times.append(float(out[0]) * 1000)
        imports[name] = {"median_ms": statistics.median(times)}
    imports["ratio_median"] = imports["this_code"]["median_ms"] / imports["baseline_code"]["median_ms"]
    return {"per_turn": result, "import": imports}


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
    parser.add_argument("--baseline-code", default="", metavar="DIR",
                        help="another checkout's root: its client side by side with this one")
    args = parser.parse_args()
    with AgentProcess() as agent:
        if args.baseline_code:
            results = {"against_baseline": against_baseline(agent, args.baseline_code, args.turns, args.fresh)}
            print(json.dumps(results, indent=2))
            if args.json:
                write_json(args.json, results)
            return
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
