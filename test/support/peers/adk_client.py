# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Ask an A2A agent through google-adk's ``RemoteA2aAgent``, run by ADK's own ``Runner``: the ADK
client in interop tests. No model: the remote agent is the root agent.

It must run under an interpreter with google-adk and its ``a2a`` extra (see
``test/support/interop.py:adk_python``); it imports nothing from this project.

    python test/support/peers/adk_client.py CARD_URL [--blocking] TEXT...

Sends each TEXT in turn in one ADK session (streaming unless ``--blocking``: the a2a-sdk client
then sends SendMessage). Prints one JSON line per TEXT:

* ``kept``: the texts of the remote agent's events that ADK keeps in the session (what a parent
  agent's model is shown as the remote agent's reply): events that are not partial, thoughts
  left out;
* ``final``: the text of the last event of the turn that has text (what an ``AgentTool`` hands
  back as the remote agent's answer);
* ``partial``: the texts of the partial events, in order (what a streaming UI shows as it comes);
* ``errors``: the events' error messages.

An error is printed to stderr and ends the process with status 1.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import warnings

import httpx
from a2a.client import ClientConfig, ClientFactory
from google.adk.agents.remote_a2a_agent import RemoteA2aAgent
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

warnings.filterwarnings("ignore", message=r"\[EXPERIMENTAL\]")


def _text(event, thoughts: bool = False) -> str:
    parts = event.content.parts if event.content and event.content.parts else []
    return "".join(p.text or "" for p in parts if thoughts or not p.thought)


async def converse(card_url: str, texts: list[str], streaming: bool) -> None:
    async with httpx.AsyncClient(timeout=60) as http:
        factory = ClientFactory(ClientConfig(streaming=streaming, httpx_client=http))
        agent = RemoteA2aAgent(name="persona", agent_card=card_url, httpx_client=http, a2a_client_factory=factory)
        sessions = InMemorySessionService()
        runner = Runner(app_name="interop", agent=agent, session_service=sessions)
        session = await sessions.create_session(app_name="interop", user_id="user")
        for text in texts:
            seen = len(session.events)
            partial, final, errors = [], "", []
            async for event in runner.run_async(user_id="user", session_id=session.id,
                                                new_message=types.Content(role="user",
                                                                          parts=[types.Part(text=text)])):
                if event.error_message:
                    errors.append(event.error_message)
                if event.partial:
                    partial.append(_text(event))
                elif _text(event):
                    final = _text(event)
            session = await sessions.get_session(app_name="interop", user_id="user", session_id=session.id)
            kept = [_text(e) for e in session.events[seen:] if e.author == agent.name and _text(e)]
            print(json.dumps({"kept": kept, "final": final, "partial": partial, "errors": errors}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("card_url")
    parser.add_argument("--blocking", action="store_true")
    parser.add_argument("texts", nargs="+")
    args = parser.parse_args()
    try:
        asyncio.run(converse(args.card_url, args.texts, streaming=not args.blocking))
    except Exception as exc:  # the test shows it
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
