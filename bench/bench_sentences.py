#!/usr/bin/env python3
"""Sentence splitting cost against the length of the answer, beside the splitter it replaced.

    python bench/bench_sentences.py [--sizes 10000,40000,100000,400000,1000000] [--old-max 100000]
                                    [--runs 3] [--json bench/results/sentences.json]

An answer of N characters of short sentences (with abbreviations, initials and numbers, as
speech has them) is split into the units to speak, in-process, two ways:

* ``whole``: one revision carrying the whole text (a blocking answer, a Task snapshot);
* ``streamed``: appended chunks of 64 characters (a streamed answer).

``linear`` is ``ovos_a2a_solver.answers.sentences``; ``before`` is the splitter as it was
(``test/support/sentences_before.py``), which rescanned the text from its start for every period,
run only up to ``--old-max`` characters (its cost grows with the square of the text). Each
figure is the least CPU time of the splitting thread over ``--runs`` (other processes on a
shared machine do not count).
``growth`` is the time at N divided by the time at the previous size, beside the size ratio:
linear cost grows as the size does.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "test"))

from support import sentences_before  # noqa: E402
from ovos_a2a_solver.answers import sentences  # noqa: E402
from ovos_a2a_solver.answers.revisions import Revision  # noqa: E402

SENTENCES = ("The cat sat on the mat.", "Dr. Ada came at 3.", "Is it 4.5 now?", "Yes!", "J. R. wrote it.",
             "We met Mrs. Smith, e.g. at noon.", "It works…", "“Go,” she said.")
CHUNK = 64


def answer_text(size: int) -> str:
    """``size`` characters of short sentences."""
    out, length, n = [], 0, 0
    while length < size:
        sentence = SENTENCES[n % len(SENTENCES)] + " "
        out.append(sentence)
        length += len(sentence)
        n += 1
    return "".join(out)[:size]


def split_whole(module, text: str) -> int:
    return sum(1 for _ in module.speak([Revision("a", text, False, True)]))


def split_streamed(module, text: str) -> int:
    speaker, spoken = module.SentenceSpeaker(), 0
    for start in range(0, len(text), CHUNK):
        spoken += len(speaker.add(Revision("a", text[start:start + CHUNK], start > 0)))
    return spoken + len(speaker.finish())


def best_of(runs: int, work, module, text: str) -> tuple[float, int]:
    best, units = float("inf"), 0
    for _ in range(runs):
        start = time.thread_time()
        units = work(module, text)
        best = min(best, time.thread_time() - start)
    return best, units


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,40000,100000,400000,1000000")
    parser.add_argument("--old-max", type=int, default=100_000, help="largest size the old splitter is run on")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict = {"sizes": sizes, "chunk": CHUNK, "runs": args.runs, "way": {}}
    for way, work in (("whole", split_whole), ("streamed", split_streamed)):
        rows = []
        for size in sizes:
            text = answer_text(size)
            row: dict = {"chars": size}
            sides = [("linear", sentences)] + ([("before", sentences_before)] if size <= args.old_max else [])
            for side, module in sides:
                runs = args.runs if side == "linear" or size <= 20_000 else 1
                seconds, units = best_of(runs, work, module, text)
                row[side] = {"ms": round(seconds * 1000, 2), "units": units}
            if "before" in row:
                assert row["before"]["units"] == row["linear"]["units"], row
                row["before_over_linear"] = round(row["before"]["ms"] / row["linear"]["ms"], 1)
            if rows:
                previous = rows[-1]
                row["size_ratio"] = round(size / previous["chars"], 2)
                for side in ("linear", "before"):
                    if side in row and side in previous:
                        row[f"growth_{side}"] = round(row[side]["ms"] / previous[side]["ms"], 2)
            rows.append(row)
            print(f"{way:9} {size:>8} chars: linear {row['linear']['ms']:>9.2f} ms"
                  + (f", before {row['before']['ms']:>10.2f} ms ({row['before_over_linear']}x)" if "before" in row
                     else "")
                  + (f"; x{row['size_ratio']} text -> linear x{row.get('growth_linear')}"
                     + (f", before x{row['growth_before']}" if "growth_before" in row else "") if "size_ratio" in row
                     else ""), flush=True)
        results["way"][way] = rows
    results["command"] = "python bench/bench_sentences.py " + " ".join(sys.argv[1:])
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
