#!/usr/bin/env python3
# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""How soon a persona says the first sentence of its first answer, beside its tenth, and
beside the code of another commit.

    python bench/bench_first_turn.py [--before COMMIT] [--runs 3] [--json bench/results/first-turn.json]

Each run is a fresh Python process, as ovos-core is when it loads its personas: it imports
``ovos_a2a_solver``, builds an ``A2AChatEngine`` for the bridge's echo backend (a bridge
started here, with its default echo backend), waits ``--idle`` seconds (3: the persona loaded
long before anyone speaks to it), then asks "slow:1" ten times in one session through
``stream_sentences``, as ovos-persona does, timing each turn from the call to its first
sentence. The figures are the medians over ``--runs`` of the first turn and of the tenth.

``--before COMMIT`` measures that commit's ``ovos_a2a_solver`` too (a ``git worktree`` of it,
removed afterwards), in the same run, against the same bridge.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TURNS = 10


def measure(bridge_url: str, idle: float) -> list[float]:
    """Seconds to the first sentence of each of ``TURNS`` turns of one fresh engine."""
    import time

    from ovos_plugin_manager.templates.agents import AgentMessage, MessageRole

    from ovos_a2a_solver import A2AChatEngine

    state = tempfile.mkdtemp(prefix="bench_first_turn_")
    engine = A2AChatEngine({"agent_url": bridge_url, "state_file": os.path.join(state, "c.json"), "timeout": 30})
    time.sleep(idle)
    seconds = []
    for _ in range(TURNS):
        start = time.monotonic()
        sentences = engine.stream_sentences([AgentMessage(role=MessageRole.USER, content="slow:1")],
                                            session_id="bench")
        next(iter(sentences))
        seconds.append(time.monotonic() - start)
        sentences.close()
    engine.shutdown()
    return seconds


def measure_in(code: Path, bridge_url: str, idle: float, runs: int) -> dict:
    """The medians of the first and the tenth turn with the ``ovos_a2a_solver`` under ``code``."""
    firsts, tenths = [], []
    for _ in range(runs):
        result = subprocess.run([sys.executable, "-P", __file__, "--measure", "--bridge-url", bridge_url,
                                 "--idle", str(idle)],
                                env={**os.environ, "PYTHONPATH": str(code)}, capture_output=True, text=True,
                                check=True)
        seconds = json.loads(result.stdout.strip().splitlines()[-1])
        firsts.append(seconds[0])
        tenths.append(seconds[-1])
    return {"first turn": round(statistics.median(firsts), 3), "tenth turn": round(statistics.median(tenths), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", help="a commit whose code is measured beside this checkout's")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--idle", type=float, default=3.0, help="seconds between building the engine and asking")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bridge-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.bridge_url, args.idle)))
        return

    sys.path.insert(0, str(ROOT / "test"))
    from support.bridge_process import BridgeProcess

    columns = {}
    with tempfile.TemporaryDirectory() as tmp, BridgeProcess() as bridge:
        columns["this checkout"] = measure_in(ROOT, bridge.url, args.idle, args.runs)
        if args.before:
            tree = Path(tmp) / "before"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), args.before],
                           check=True)
            try:
                columns[args.before] = measure_in(tree, bridge.url, args.idle, args.runs)
            finally:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=True)
    names = list(columns)
    print(f"{'seconds to the first sentence':<32}" + "".join(f"{name:>16}" for name in names))
    for case in ("first turn", "tenth turn"):
        print(f"{case:<32}" + "".join(f"{columns[n][case]:>15.3f}s" for n in names))
    if args.json:
        Path(args.json).write_text(json.dumps({"idle": args.idle, "runs": args.runs, "columns": columns},
                                              indent=2) + "\n")


if __name__ == "__main__":
    main()
