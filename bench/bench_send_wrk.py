#!/usr/bin/env python3
# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""SendMessage throughput with wrk as the load (C, two threads): the bridge and a bare a2a-sdk
server, each with the persona and with an echo, and ovos-persona-server, side by side on loopback.

    python bench/bench_send_wrk.py [--pin] [--seconds 10] [--concurrency 16] [--rounds 3] [--quick] [--keep]
                                   [--servers NAME,...] [--json bench/results/bridge-wrk.json]

The load is that of ``bench_send.py`` (a fresh messageId per request, only COMPLETED tasks
count) from wrk (``apt-get install wrk``); ``--pin``: servers on CPU 1, wrk on CPU 0 (needs
taskset). The bare servers run as the a2a-sdk does by default where ``opentelemetry-api`` is
installed (as here: fastapi and Google's libraries bring it), with a span around every handler
call; ``bare_sdk_echo_untraced`` runs with those spans off, as the bridge does
(``OTEL_INSTRUMENTATION_A2A_SDK_ENABLED=false``), and ``bare_sdk_echo_untraced_tuned_gc`` also with its
garbage collector tuned as the bridge tunes its own (start-up's objects frozen, the young collected every
10,000 allocations instead of 700): the SDK at its best. Rounds alternate the order; medians and the
ratios of req/s are reported, and each server's CPU (user + system, its processes) per completed
request (``cpu_ms_per_ok``; medians ``median_cpu_ms_per_ok``).

``--baseline-code DIR``: also the echo bridge of another checkout of the package (``DIR``, its
root), side by side, with the ratio of this one's req/s to it: a change measured before and after
in one run. ``--with-metrics``: also the echo bridge with ``--metrics`` (what counting every
request, turn and slot costs), with the ratio of its req/s to the bridge without. ``--servers``:
only those named (e.g. ``bridge_echo,bare_sdk_echo_untraced``; the baseline is added with
``--baseline-code``, the metrics bridge with ``--with-metrics``), and the ratios among them.
``--quick``: 2 rounds x 3 s. The results are recorded under the key ``send-wrk``.
"""
from __future__ import annotations

from pathlib import Path

from benchlib import (BareProcess, BridgeProcess, PersonaServerProc, add_round_arguments, bench_arguments,
                      resolve_round_arguments, run_benchmark, wrk_rounds)


def bench_send_wrk(args, workdir: Path, persona: Path) -> dict:
    """SendMessage throughput with wrk as the load (see ``wrk_round``), servers side by side."""
    print(f"\n== SendMessage throughput with wrk: {args.concurrency} connections, {args.rounds} rounds x "
          f"{args.seconds:g} s{', server on CPU 1, wrk on CPU 0' if args.pin else ''}", flush=True)
    servers = [
        BridgeProcess(workdir, "bridge", ["--persona", str(persona), "--state-dir", str(workdir / "state-wrk"),
                                          "--max-concurrent", str(max(args.concurrency, 8))]),
        BridgeProcess(workdir, "bridge_echo", ["--backend", "echo", "--state-dir", str(workdir / "state-wrk-echo"),
                                               "--max-concurrent", str(max(args.concurrency, 8))]),
        BareProcess(workdir, "bare_sdk", persona),
        BareProcess(workdir, "bare_sdk_echo", persona, echo=True),
        BareProcess(workdir, "bare_sdk_echo_untraced", persona, echo=True, traced=False),
        BareProcess(workdir, "bare_sdk_echo_untraced_tuned_gc", persona, echo=True, traced=False, tuned_gc=True),
        PersonaServerProc(workdir, "persona_server", persona),
    ]
    ratios = [("bridge", "persona_server"), ("bridge", "bare_sdk"), ("bridge_echo", "bare_sdk_echo"),
              ("bridge_echo", "bare_sdk_echo_untraced"), ("bridge_echo", "bare_sdk_echo_untraced_tuned_gc")]
    if args.baseline_code:
        servers.append(BridgeProcess(workdir, "bridge_echo_baseline",
                                     ["--backend", "echo", "--state-dir", str(workdir / "state-wrk-baseline"),
                                      "--max-concurrent", str(max(args.concurrency, 8))],
                                     env={"PYTHONPATH": str(Path(args.baseline_code).resolve())}))
        ratios.append(("bridge_echo", "bridge_echo_baseline"))
    if args.with_metrics:
        servers.append(BridgeProcess(workdir, "bridge_echo_metrics",
                                     ["--backend", "echo", "--state-dir", str(workdir / "state-wrk-metrics"),
                                      "--max-concurrent", str(max(args.concurrency, 8)), "--metrics"]))
        ratios.append(("bridge_echo_metrics", "bridge_echo"))
    if args.servers:
        chosen = (set(args.servers.split(",")) | ({"bridge_echo_baseline"} if args.baseline_code else set())
                  | ({"bridge_echo_metrics"} if args.with_metrics else set()))
        unknown = chosen - {server.name for server in servers}
        if unknown:
            raise SystemExit(f"--servers: no server named {', '.join(sorted(unknown))}")
        servers = [server for server in servers if server.name in chosen]
        ratios = [(a, b) for a, b in ratios if a in chosen and b in chosen]
    return wrk_rounds(servers, workdir, args.concurrency, args.seconds, args.rounds, args.pin, ratios)


def main() -> None:
    parser = bench_arguments(__doc__, "2 rounds x 3 s")
    add_round_arguments(parser)
    parser.add_argument("--pin", action="store_true", help="each server on CPU 1, wrk on CPU 0 (needs taskset)")
    parser.add_argument("--baseline-code", default="", metavar="DIR",
                        help="also the echo bridge of the package in this checkout, for a ratio before/after")
    parser.add_argument("--with-metrics", action="store_true",
                        help="also the echo bridge with --metrics, for the ratio of what metrics cost")
    parser.add_argument("--servers", default="", metavar="NAME,...",
                        help="only these servers (bridge, bridge_echo, bare_sdk, bare_sdk_echo, "
                             "bare_sdk_echo_untraced, persona_server)")
    args = parser.parse_args()
    resolve_round_arguments(args)
    run_benchmark("send-wrk", args, bench_send_wrk)


if __name__ == "__main__":
    main()
