#!/usr/bin/env python3
# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""SendMessage throughput of ``serve --workers 2`` beside one bridge process and
ovos-persona-server, the same persona, with wrk as the load, nothing pinned.

    python bench/bench_workers.py [--seconds 10] [--concurrency 16] [--rounds 3] [--quick] [--keep]
                                  [--json bench/results/bridge-workers.json]

The load is that of ``bench_send_wrk.py`` (``apt-get install wrk``). Each server may use both
cores (the persona server, one process, uses one), and wrk shares them with it; the server CPU
includes the workers'. Rounds alternate the order; medians and the ratios of req/s are reported.

``--quick``: 2 rounds x 3 s. The results are recorded under the key ``send-workers``.
"""
from __future__ import annotations

from pathlib import Path

from benchlib import (BridgeProcess, PersonaServerProc, add_round_arguments, bench_arguments, resolve_round_arguments,
                      run_benchmark, wrk_rounds)


def bench_send_workers(args, workdir: Path, persona: Path) -> dict:
    """``serve --workers 2`` beside one bridge process and ovos-persona-server, the same
    persona, wrk as the load. Nothing is pinned: each server may use both cores (the
    persona server, one process, uses one), and wrk shares them with it."""
    print(f"\n== SendMessage throughput of 2 workers, with wrk: {args.concurrency} connections, "
          f"{args.rounds} rounds x {args.seconds:g} s, nothing pinned", flush=True)
    limit = ["--max-concurrent", str(max(args.concurrency, 8))]
    servers = [
        BridgeProcess(workdir, "bridge_2_workers", ["--persona", str(persona), "--workers", "2", *limit,
                                                    "--state-dir", str(workdir / "state-workers")]),
        BridgeProcess(workdir, "bridge", ["--persona", str(persona), *limit,
                                          "--state-dir", str(workdir / "state-one")]),
        PersonaServerProc(workdir, "persona_server", persona),
    ]
    ratios = [("bridge_2_workers", "persona_server"), ("bridge_2_workers", "bridge"), ("bridge", "persona_server")]
    return wrk_rounds(servers, workdir, args.concurrency, args.seconds, args.rounds, False, ratios)


def main() -> None:
    parser = bench_arguments(__doc__, "2 rounds x 3 s")
    add_round_arguments(parser)
    args = parser.parse_args()
    resolve_round_arguments(args)
    args.pin = False
    run_benchmark("send-workers", args, bench_send_workers)


if __name__ == "__main__":
    main()
