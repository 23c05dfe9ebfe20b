"""A genuine a2a-sdk **0.3.x** client over HTTP+JSON (its REST transport), for interop tests.

It must run under an interpreter with a2a-sdk 0.3.x (see ``test/support/interop.py:legacy_python``);
it imports nothing from this project.

    python test/support/legacy/v03_rest_client.py ROOT_URL TEXT SLOW_TEXT

It resolves the card at ``ROOT_URL`` with the 0.3 ``A2ACardResolver``, makes ``ClientFactory``
clients that speak only HTTP+JSON, and prints one JSON object on stdout:

* ``paths``: the path of every request it sent after the card, and ``url`` the card's 0.3 HTTP+JSON interface
* ``send``: ``TEXT`` sent blocking (``POST /v1/message:send``), ``stream``: streamed
  (``/v1/message:stream``); each as ``v03_client.py`` reports a way (with the ``task_id``)
* ``get``: the task of ``send`` read again (``GET /v1/tasks/{id}``): ``{"state", "text"}``
* ``cancel``: ``SLOW_TEXT`` streamed, canceled (``/v1/tasks/{id}:cancel``) after its first
  event: ``{"state"}`` as the cancel answered
"""
from __future__ import annotations

import asyncio
import json
import sys

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import TaskIdParams, TaskQueryParams, TransportProtocol

from v03_client import _artifact_text, _message, _via_factory  # beside this script (its directory is on the path)


REST = [TransportProtocol.http_json]


def _rest_client(card, hc: httpx.AsyncClient, streaming: bool):
    return ClientFactory(ClientConfig(streaming=streaming, httpx_client=hc, supported_transports=REST)).create(card)


async def _cancel(card, hc: httpx.AsyncClient, text: str) -> dict:
    client, canceled = _rest_client(card, hc, streaming=True), None
    async for item in client.send_message(_message(text)):  # read to its end: it ends with the cancel
        if isinstance(item, tuple) and canceled is None:
            canceled = await client.cancel_task(TaskIdParams(id=item[0].id))
    return {"state": canceled.status.state.value if canceled else None}


async def main(root: str, text: str, slow_text: str) -> dict:
    paths: list[str] = []

    async def note(request: httpx.Request) -> None:
        paths.append(f"{request.method} {request.url.path}")

    async with httpx.AsyncClient(timeout=60, event_hooks={"request": [note]}) as hc:
        card = await A2ACardResolver(hc, root).get_agent_card()
        paths.clear()
        sent = await _via_factory(card, hc, text, False, REST)
        got = await _rest_client(card, hc, streaming=False).get_task(TaskQueryParams(id=sent["task_id"]))
        streamed = await _via_factory(card, hc, text, True, REST)
        canceled = await _cancel(card, hc, slow_text)
        return {
            "paths": paths,
            "url": next((i.url for i in card.additional_interfaces or () if i.transport == "HTTP+JSON"), None),
            "send": sent,
            "stream": streamed,
            "get": {"state": got.status.state.value, "text": _artifact_text(got)},
            "cancel": canceled,
        }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(*sys.argv[1:4]))), flush=True)
