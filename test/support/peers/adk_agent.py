"""A deterministic google-adk agent, published with ADK's own A2A helper (``to_a2a``): the ADK
peer in interop tests. No model and no API key: the agent writes its answer itself.

It must run under an interpreter with google-adk and its ``a2a`` extra (see
``test/support/interop.py:adk_python``); it imports nothing from this project.

    python test/support/peers/adk_agent.py [--host 127.0.0.1] [--executor default|artifacts]

It binds a socket to port 0, prints one JSON line ``{"url": "http://127.0.0.1:PORT"}`` on stdout
when it serves (the card at ``{url}/.well-known/agent-card.json``, JSON-RPC at ``{url}/``), and
serves until SIGTERM/SIGINT.

The agent, ``ScriptedAgent`` (a ``BaseAgent``), answers every message in three sentences:

    You asked about {text}. This is turn {n} of our conversation. I answer without a model.

``n`` counts the user messages in the ADK session; ``to_a2a`` keys the session by the A2A
contextId, so ``n`` tells whether the conversation was kept. As an ADK model agent does when it
streams, it yields the answer as partial events, in four chunks, three of which end in the middle
of a sentence (:func:`chunks`), then the whole text as one final event. A message that contains
"slowly" pauses :data:`SLOW_PAUSE` seconds before each chunk after the first.

What A2A carries depends on the executor (ADK 2.13 with a2a-sdk 1.3, A2A 1.0):

* ``default``, what ``to_a2a(agent)`` builds: each ADK event becomes a WORKING status update
  whose message holds its text (the four chunks, then the whole answer); then one artifact with
  the whole answer (``lastChunk``); then COMPLETED. The chunks are status messages only.
* ``artifacts``, ``to_a2a(agent, agent_executor_factory=...)`` with ADK's
  ``A2aAgentExecutor(force_new_version=True)`` (what a client gets from the default one when it
  asks for ADK's own A2A extension): the chunks as one artifact, the first chunk with
  ``append`` false, the others appended; then that artifact again, with the whole answer,
  ``append`` false and ``lastChunk``; then COMPLETED.

The card, built by ADK: one JSONRPC interface, protocol version 1.0, at ``{url}`` (no trailing
slash); ``capabilities.streaming: true``; one skill.
"""
from __future__ import annotations

import argparse
import asyncio
import warnings
from typing import AsyncGenerator, List

from google.adk.a2a.executor.a2a_agent_executor import A2aAgentExecutor
from google.adk.a2a.utils.agent_to_a2a import to_a2a
from google.adk.agents import BaseAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event
from google.genai import types

from port0_server import serve

# ADK marks its A2A support experimental, once per class used: noise in the stderr that a
# failing test shows
warnings.filterwarnings("ignore", message=r"\[EXPERIMENTAL\]")

#: seconds before each chunk after the first, normally and when the message says "slowly"
PAUSE, SLOW_PAUSE = 0.02, 0.5


def chunks(text: str, turn: int) -> List[str]:
    """The answer to ``text`` on turn ``turn``, as the chunks it is streamed in."""
    return [f"You asked about {text}. This is", f" turn {turn} of our", " conversation. I answer",
            " without a model."]


class ScriptedAgent(BaseAgent):
    """Answers from a script, streamed as ADK partial events, then the whole answer."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        text = " ".join(part.text for part in ctx.user_content.parts if part.text).strip()
        turn = sum(1 for event in ctx.session.events if event.author == "user")
        pause = SLOW_PAUSE if "slowly" in text else PAUSE
        pieces = chunks(text, turn)
        for n, piece in enumerate(pieces):
            if n:
                await asyncio.sleep(pause)
            yield self._event(ctx, piece, partial=True)
        yield self._event(ctx, "".join(pieces), partial=False)

    def _event(self, ctx: InvocationContext, text: str, partial: bool) -> Event:
        return Event(author=self.name, invocation_id=ctx.invocation_id, partial=partial,
                     content=types.Content(role="model", parts=[types.Part(text=text)]))


def build_app(executor: str, host: str, port: int):
    agent = ScriptedAgent(name="scripted", description="Answers from a script, without a model.")
    if executor == "default":
        return to_a2a(agent, host=host, port=port)
    return to_a2a(agent, host=host, port=port,
                  agent_executor_factory=lambda runner: A2aAgentExecutor(runner=runner, force_new_version=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--executor", choices=("default", "artifacts"), default="default")
    args = parser.parse_args()
    # to_a2a adds the A2A routes in the app's lifespan, so uvicorn must run it
    serve(lambda host, port: build_app(args.executor, host, port), args.host, lifespan="on")


if __name__ == "__main__":
    main()
