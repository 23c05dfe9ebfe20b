"""The cost of signed agent cards, side by side in one run.

    python bench/bench_signing.py [--requests 300] [--turns 100] [--fresh 10]

Two bridges run as subprocesses on loopback (``--backend echo``), the same but for
``--card-signing-key`` (an EC P-256 key made for the run). Measured, interleaving the two
sides so a noisy machine hurts both alike:

1. card GET latency (``A2A-Version: 1.0``, one keep-alive connection each): unsigned vs signed,
   medians, p90 and their ratio; and what one signature costs to make (the bridge makes it
   once, at start-up);
2. per-turn latency of ``A2AClient.send_task`` against the signed bridge with the signature
   required vs not (the card cached, so the check is not paid again), and their ratio;
3. the first turn of a fresh client (card fetch, key set, check, message) with the signature
   required vs not, and what one check costs.

Results go to ``bench/results/signing.json``.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

import httpx

from benchlib import REPO, machine_brief, median_p90, use_test_helpers, write_json

use_test_helpers()
sys.path.insert(0, str(REPO))  # the package of this checkout, before any installed one
from support.bridge_process import BridgeProcess  # noqa: E402

V1 = {"A2A-Version": "1.0"}


def ratio(a: dict, b: dict) -> float:
    return round(a["median_ms"] / b["median_ms"], 3)


def card_gets(unsigned: str, signed: str, requests: int) -> dict:
    times: dict[str, list[float]] = {"unsigned": [], "signed": []}
    with httpx.Client(headers=V1) as one, httpx.Client(headers=V1) as two:
        clients = {"unsigned": (one, unsigned + "/.well-known/agent-card.json"),
                   "signed": (two, signed + "/.well-known/agent-card.json")}
        for side, (client, url) in clients.items():  # warm the connections
            client.get(url).raise_for_status()
        signatures = set()
        for _ in range(requests):
            for side, (client, url) in clients.items():
                start = time.perf_counter()
                response = client.get(url)
                times[side].append(time.perf_counter() - start)
                if side == "signed":
                    signatures.add(response.json()["signatures"][0]["signature"])
    out = {side: median_p90(samples, digits=3) for side, samples in times.items()}
    out["ratio_signed_to_unsigned"] = ratio(out["signed"], out["unsigned"])
    out["distinct_signatures_served"] = len(signatures)
    return out


def signing_cost(key_file: str, repeat: int = 50) -> dict:
    """What the bridge pays once: one signature of its card."""
    from ovos_a2a_solver.bridge.edge.card import build_card, sign_card
    from ovos_a2a_solver.bridge.backends.echo import EchoBackend
    from ovos_a2a_solver.bridge.config import BridgeSettings
    from ovos_a2a_solver.jwk import read_signing_key

    key, card = read_signing_key(key_file), build_card(BridgeSettings(), EchoBackend())
    samples = []
    for _ in range(repeat):
        fresh = type(card)()
        fresh.CopyFrom(card)
        start = time.perf_counter()
        sign_card(fresh, key, "http://127.0.0.1:1/a2a/.well-known/jwks.json")
        samples.append(time.perf_counter() - start)
    return median_p90(samples, digits=3)


def turns(url: str, count: int) -> dict:
    from ovos_a2a_solver import A2AClient, CardTrust

    times: dict[str, list[float]] = {"not_required": [], "required": []}
    with A2AClient(url) as plain, A2AClient(url, card_trust=CardTrust(require_signed_card=True)) as strict:
        clients = {"not_required": plain, "required": strict}
        for client in clients.values():
            client.send_task("warm up", session_id="bench")
        for n in range(count):
            for side, client in clients.items():
                start = time.perf_counter()
                client.send_task(f"turn {n}", session_id="bench")
                times[side].append(time.perf_counter() - start)
        fetches = {side: client.card_fetches for side, client in clients.items()}
    out = {side: median_p90(samples, digits=3) for side, samples in times.items()}
    out["ratio_required_to_not"] = ratio(out["required"], out["not_required"])
    out["card_fetches"] = fetches
    return out


def first_turns(url: str, count: int) -> dict:
    from ovos_a2a_solver import A2AClient, CardTrust

    times: dict[str, list[float]] = {"not_required": [], "required": []}
    for n in range(count):
        for side, trust in (("not_required", CardTrust()), ("required", CardTrust(require_signed_card=True))):
            start = time.perf_counter()
            with A2AClient(url, card_trust=trust) as client:
                client.send_task(f"first {n}")
            times[side].append(time.perf_counter() - start)
    out = {side: median_p90(samples, digits=3) for side, samples in times.items()}
    out["ratio_required_to_not"] = ratio(out["required"], out["not_required"])
    return out


def check_cost(url: str, repeat: int = 50) -> dict:
    """What a client pays once per card: the check itself, key set read included."""
    from a2a.client.card_resolver import parse_agent_card

    from ovos_a2a_solver import CardTrust
    from ovos_a2a_solver.agent.signatures import signature_check

    card = parse_agent_card(httpx.get(url + "/.well-known/agent-card.json", headers=V1).json())
    check = signature_check(url, CardTrust(require_signed_card=True))

    async def run() -> list[float]:
        samples = []
        async with httpx.AsyncClient() as http:
            async def read(key_set_url):
                response = await http.get(key_set_url)
                return response.status_code, key_set_url, response.content

            for _ in range(repeat):
                start = time.perf_counter()
                await check.check(card, url, read)
                samples.append(time.perf_counter() - start)
        return samples

    return median_p90(asyncio.run(run()), digits=3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--fresh", type=int, default=10)
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "signing.json"))
    args = parser.parse_args()

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    folder = Path(tempfile.mkdtemp(prefix="bench_signing_"))
    key_file = folder / "card.pem"
    key_file.write_bytes(ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    started = time.perf_counter()
    with BridgeProcess() as unsigned, BridgeProcess("--card-signing-key", str(key_file)) as signed:
        result = {
            "command": "python bench/bench_signing.py " + " ".join(sys.argv[1:]),
            "machine": machine_brief(),
            "card_get": card_gets(unsigned.url, signed.url, args.requests),
            "signing_once_ms": signing_cost(str(key_file)),
            "turn": turns(signed.url, args.turns),
            "first_turn": first_turns(signed.url, args.fresh),
            "check_once_ms": check_cost(signed.url),
        }
    result["seconds"] = round(time.perf_counter() - started, 1)
    write_json(args.out, result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
