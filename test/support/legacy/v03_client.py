"""A genuine a2a-sdk **0.3.x** client, used to check that the bridge still talks to 0.3 peers.

It must run under an interpreter with a2a-sdk 0.3.x (see ``test/support/interop.py:legacy_python``);
it imports nothing from this project.

    python test/support/legacy/v03_client.py ROOT_URL TEXT

``ROOT_URL`` is where the card is (``http://127.0.0.1:PORT``). It resolves the card with the
0.3 ``A2ACardResolver`` and sends ``TEXT`` three ways, each as a new task:

* ``factory_blocking``: ``ClientFactory`` client with ``streaming=False`` (``message/send``)
* ``factory_streaming``: ``ClientFactory`` client with ``streaming=True`` (``message/stream``)
* ``legacy_blocking``: the 0.3 ``A2AClient`` class (``message/send``)

and prints one JSON object on stdout: the card's ``protocolVersion``/``preferredTransport``
as the 0.3 model read them, and for each way ``{"state", "text", "events"}`` where ``text``
is the answer artifact's text parts joined with "" and ``events`` the kinds seen in order.
"""
from __future__ import annotations

import asyncio
import json
import sys
import uuid
import warnings

import httpx
from a2a.client import A2ACardResolver, A2AClient, ClientConfig, ClientFactory
from a2a.types import (Message, MessageSendParams, Part, Role, SendMessageRequest, Task, TaskArtifactUpdateEvent,
                       TaskStatusUpdateEvent, TextPart)


def _message(text: str) -> Message:
    return Message(role=Role.user, message_id=uuid.uuid4().hex, parts=[Part(root=TextPart(text=text))])


def _artifact_text(task: Task | None) -> str:
    if task is None:
        return ""
    return "".join(p.root.text for a in (task.artifacts or []) for p in a.parts if isinstance(p.root, TextPart))


async def _via_factory(card, hc: httpx.AsyncClient, text: str, streaming: bool, transports=None) -> dict:
    """``text`` sent by a ``ClientFactory`` client (speaking only ``transports``, if given)."""
    config = ClientConfig(streaming=streaming, httpx_client=hc)
    if transports:
        config.supported_transports = list(transports)
    client = ClientFactory(config).create(card)
    events: list[str] = []
    chunks: list[str] = []
    last_task: Task | None = None
    async for item in client.send_message(_message(text)):
        if isinstance(item, Message):
            events.append("message")
            chunks.append("".join(p.root.text for p in item.parts if isinstance(p.root, TextPart)))
            continue
        task, update = item
        last_task = task
        if update is None:
            events.append("task")
        elif isinstance(update, TaskStatusUpdateEvent):
            events.append("status-update:" + update.status.state.value)
        elif isinstance(update, TaskArtifactUpdateEvent):
            events.append("artifact-update")
            chunks.extend(p.root.text for p in update.artifact.parts if isinstance(p.root, TextPart))
    return {"state": last_task.status.state.value if last_task else None,
            "text": "".join(chunks) if streaming else _artifact_text(last_task),
            "task_text": _artifact_text(last_task),
            "task_id": last_task.id if last_task else None,
            "events": events}


async def _via_legacy_client(card, hc: httpx.AsyncClient, text: str) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        client = A2AClient(httpx_client=hc, agent_card=card)
    response = await client.send_message(SendMessageRequest(id=uuid.uuid4().hex,
                                                            params=MessageSendParams(message=_message(text))))
    result = response.root
    if hasattr(result, "error"):
        return {"state": None, "text": "", "error": result.error.model_dump(mode="json"), "events": ["error"]}
    task = result.result
    if not isinstance(task, Task):
        return {"state": None, "text": "", "events": ["message"]}
    return {"state": task.status.state.value, "text": _artifact_text(task), "events": ["task"]}


async def main(root: str, text: str) -> dict:
    async with httpx.AsyncClient(timeout=60) as hc:
        card = await A2ACardResolver(hc, root).get_agent_card()
        return {
            "card": {"protocolVersion": card.protocol_version, "preferredTransport": card.preferred_transport,
                     "url": card.url},
            "factory_blocking": await _via_factory(card, hc, text, streaming=False),
            "factory_streaming": await _via_factory(card, hc, text, streaming=True),
            "legacy_blocking": await _via_legacy_client(card, hc, text),
        }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2]))), flush=True)
