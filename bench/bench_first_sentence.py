#!/usr/bin/env python3
"""How soon the first sentence of an answer is said, by the shape the agent streams it in,
beside the code of another commit.

    python bench/bench_first_sentence.py [--before 96905f4] [--runs 3] [--json bench/results/first-sentence.json]

Each figure is the median, over ``--runs``, of the seconds from ``A2AClient.stream_sentences``
being called to its first sentence (a fresh client each run: the card is fetched too). The
stream is closed after that sentence (read to its end where the bench releases the agent).
Agents (test/support/a2a_agent.py, and the bridge's echo backend), each answering "The answer
is forty-two. Have a nice day.":

* ``artifact chunks``: stream-paced, the answer as appended chunks of an artifact;
* ``status cumulative``: status-cumulative, the text so far in each "working" status message,
  after two progress notes, then the artifact;
* ``status delta``: status-delta, each new chunk in a status message (strands, ADK), after two
  notes, then the artifact;

each at 0.03 s between messages and at 0.3 s (as VoltAgent streams); ``sentence per chunk``:
stream-gated-number, "Sentence 1." then, 2 s later (the bench releases it), "Sentence 2.";
and ``bridge echo slow:2``: the bridge's echo backend, "Sentence 1." ... one every 2 s (the
bridge of this checkout holds a sentence back at most 0.25 s for the next one, to mark the last
chunk; before that change, until the next one came).

``--before COMMIT`` measures that commit's ``ovos_a2a_solver`` too (``git archive`` into a
temporary directory, run in a subprocess), in the same run, against the same agents.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHAPES = [("artifact chunks", "stream-paced"), ("status cumulative", "status-cumulative"),
          ("status delta", "status-delta")]
PACES = ("0.03", "0.3")


def first_sentence_seconds(url: str, text: str, release: str = "") -> tuple[float, str]:
    """Seconds to the first sentence of the answer to ``text``, and that sentence; ``release``:
    an admin URL posted 2 s after the start (a gated agent's next chunk)."""
    import httpx

    from ovos_a2a_solver import A2AClient

    start = time.monotonic()
    timer = threading.Timer(2.0, httpx.post, (release,)) if release else None
    if timer:
        timer.start()
    with A2AClient(url, timeout=30) as client:
        sentences = client.stream_sentences(text)
        first = next(sentences)
        seconds = time.monotonic() - start
        if timer:  # read to the end: the release goes to this turn, not to the next one
            list(sentences)
        sentences.close()
    return seconds, first


def measure(agent_url: str, bridge_url: str, runs: int) -> dict:
    """The medians of this process's ``ovos_a2a_solver``, by case."""
    cases = [(f"{label} / {pace} s", f"{agent_url}/{name}", pace, "") for label, name in SHAPES for pace in PACES]
    cases.append(("sentence per chunk / 2 s", f"{agent_url}/stream-gated-number", "go", f"{agent_url}/_admin/release"))
    cases.append(("bridge echo slow:2", bridge_url, "slow:2", ""))
    out = {}
    for case, url, text, release in cases:
        times, first = [], ""
        for _ in range(runs):
            seconds, first = first_sentence_seconds(url, text, release)
            times.append(seconds)
        out[case] = {"seconds": round(statistics.median(times), 3), "first": first}
    return out


def measure_in(code: Path, agent_url: str, bridge_url: str, runs: int) -> dict:
    """:func:`measure` with the ``ovos_a2a_solver`` under ``code``, in a subprocess."""
    result = subprocess.run([sys.executable, "-P", __file__, "--measure", "--agent-url", agent_url,
                             "--bridge-url", bridge_url, "--runs", str(runs)],
                            env={**os.environ, "PYTHONPATH": str(code)}, capture_output=True,
                            text=True, check=True)
    return json.loads(result.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", help="a commit whose code is measured beside this checkout's")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--agent-url", help=argparse.SUPPRESS)
    parser.add_argument("--bridge-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.agent_url, args.bridge_url, args.runs)))
        return

    sys.path.insert(0, str(ROOT / "test"))
    from support.agent_process import AgentProcess
    from support.bridge_process import BridgeProcess

    with tempfile.TemporaryDirectory() as tmp, AgentProcess() as agent, BridgeProcess() as bridge:
        columns = {"this checkout": measure_in(ROOT, agent.url, bridge.url, args.runs)}
        if args.before:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before, "ovos_a2a_solver"],
                                     capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
            columns[args.before] = measure_in(Path(tmp), agent.url, bridge.url, args.runs)
    names = list(columns)
    print(f"{'case':<28}" + "".join(f"{name:>16}" for name in names) + "   first sentence")
    for case, figure in columns[names[0]].items():
        print(f"{case:<28}" + "".join(f"{columns[n][case]['seconds']:>15.2f}s" for n in names)
              + f"   {figure['first']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": args.runs, "seconds": columns}, indent=2) + "\n")


if __name__ == "__main__":
    main()
