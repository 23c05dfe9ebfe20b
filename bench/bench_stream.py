#!/usr/bin/env python3
"""Streaming cost per chunk: the plugin beside a bare a2a-sdk client consuming the same stream.

    python bench/bench_stream.py [--sizes 1000,5000,20000] [--runs 3] [--json bench/results/stream.json]

Starts the scripted test agent (test/support/a2a_agent.py) on loopback; its ``flood`` agent streams
N appended chunks of one artifact as fast as it can (a word each, a sentence every tenth).
For each N, interleaving the sides so a noisy machine hurts them alike, it times the whole
turn of:

* ``bare_sdk``: an a2a-sdk client (``streaming=True``) reading every event and nothing else;
* ``stream_task``: ``A2AClient.stream_task``, every text piece;
* ``stream_sentences``: ``A2AChatEngine.stream_sentences``, every sentence.

It reports the median time per turn, the time per chunk (µs), and the plugin's extra
time per chunk over the bare client. The server's own cost is in every column (the
a2a-sdk server's grows with N); linear handling shows as an extra per chunk that stays
flat as N grows.

``--in-process`` also times the plugin's own handling alone, without any server: the same
N artifact-update events fed to the answer assembler, then to the text and sentence
readers. Its cost per chunk must not grow with N.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import uuid

from benchlib import SdkClientThread, use_test_helpers, user_message, write_json

use_test_helpers()
from support.agent_process import AgentProcess  # noqa: E402


class BareSdk(SdkClientThread):
    """One a2a-sdk streaming client on its own loop thread, used as its docs show."""

    def __init__(self, url: str) -> None:
        super().__init__(url, streaming=True, timeout=600)

    def turn(self, text: str) -> int:
        """One streamed turn, every event read; how many events."""
        async def count_events() -> int:
            events = 0
            async for _ in self.client.send_message(user_message(text)):
                events += 1
            return events

        return self.run(count_events())


def measure(agent: AgentProcess, sizes: list[int], runs: int) -> dict:
    from ovos_plugin_manager.templates.agents import AgentMessage, MessageRole

    from ovos_a2a_solver import A2AChatEngine, A2AClient

    url = agent.agent("flood")
    bare = BareSdk(url)
    client = A2AClient(url, timeout=600)
    state = tempfile.mkdtemp(prefix="bench_stream_")
    engine = A2AChatEngine({"agent_url": url, "timeout": 600, "state_file": f"{state}/c.json"})
    sides = {
        "bare_sdk": lambda n: bare.turn(str(n)),
        "stream_task": lambda n: sum(1 for _ in client.stream_task(str(n))),
        "stream_sentences": lambda n: sum(1 for _ in engine.stream_sentences(
            [AgentMessage(role=MessageRole.USER, content=str(n))], session_id=uuid.uuid4().hex)),
    }
    for run in sides.values():  # warm up
        run(50)
    results: dict = {}
    for n in sizes:
        times: dict[str, list[float]] = {name: [] for name in sides}
        counts: dict[str, int] = {}
        order = list(sides)
        for r in range(runs):
            for name in (order if r % 2 == 0 else order[::-1]):
                start = time.perf_counter()
                counts[name] = sides[name](n)
                times[name].append(time.perf_counter() - start)
        row: dict = {"chunks": n}
        bare_median = statistics.median(times["bare_sdk"])
        for name, samples in times.items():
            median = statistics.median(samples)
            row[name] = {"median_s": round(median, 3), "per_chunk_us": round(median / n * 1e6, 1),
                         "items": counts[name]}
            if name != "bare_sdk":
                row[name]["extra_per_chunk_us"] = round((median - bare_median) / n * 1e6, 1)
        results[str(n)] = row
        print(json.dumps(row), flush=True)
    client.close()
    engine.shutdown()
    return results


def in_process(sizes: list[int], runs: int) -> dict:
    """The plugin's handling of N appended chunks alone: per chunk, it must stay flat."""
    from a2a.types import Artifact, Part, StreamResponse, TaskArtifactUpdateEvent

    from ovos_a2a_solver.answers.assembler import AnswerAssembler, TextPieces
    from ovos_a2a_solver.answers.sentences import SentenceSpeaker

    results: dict = {}
    for n in sizes:
        events = [StreamResponse(artifact_update=TaskArtifactUpdateEvent(
            task_id="t", context_id="c", append=i > 0, last_chunk=i == n - 1,
            artifact=Artifact(artifact_id="answer", parts=[Part(text=f"word{i}. " if i % 10 == 9 else f"word{i} ")])))
            for i in range(n)]
        samples = []
        for _ in range(runs):
            start = time.perf_counter()
            answer, pieces, speaker = AnswerAssembler(), TextPieces(), SentenceSpeaker()
            for event in events:
                for revision in answer.feed(event):
                    pieces.add(revision)
                    speaker.add(revision)
            speaker.finish()
            answer.final_text()
            samples.append(time.perf_counter() - start)
        median = statistics.median(samples)
        results[str(n)] = {"chunks": n, "median_ms": round(median * 1000, 2),
                           "per_chunk_us": round(median / n * 1e6, 2)}
        print(json.dumps(results[str(n)]), flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,5000,20000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", default=None, help="also write the results here")
    parser.add_argument("--in-process", action="store_true", help="also time the plugin's handling alone")
    parser.add_argument("--no-server", action="store_true", help="only the in-process measure")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict = {}
    if args.in_process or args.no_server:
        results["in_process"] = in_process(sizes, max(args.runs, 5))
    if not args.no_server:
        with AgentProcess() as agent:
            results["stream"] = measure(agent, sizes, args.runs)
    print(json.dumps(results, indent=2))
    if args.json:
        write_json(args.json, results)


if __name__ == "__main__":
    main()
