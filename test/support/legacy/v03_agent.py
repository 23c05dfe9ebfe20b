"""A genuine a2a-sdk **0.3.x** A2A server, used as the legacy peer in interop tests.

It must run under an interpreter with a2a-sdk 0.3.x (see ``test/support/interop.py:legacy_python``);
it does not import anything from this project.

    python test/support/legacy/v03_agent.py [--host 127.0.0.1]

It binds a socket to port 0, prints one JSON line ``{"url": "http://127.0.0.1:PORT"}`` on stdout
when it is ready to serve, and serves until SIGTERM/SIGINT.

Agents (each its own ``A2AStarletteApplication`` mounted under a sub-path with Starlette ``Mount``,
so each one serves ``/.well-known/agent-card.json`` and the old ``/.well-known/agent.json`` under
its own prefix, and JSON-RPC at ``{url}/{name}/``):

* ``/echo``: completes at once with a text artifact ``echo03[{contextId}]: {text}``.
* ``/ask``: first message -> ``input-required`` with the question "which city?"; the follow-up
  (same taskId + contextId) completes with an artifact ``continued03[{contextId}]: {text}``.
* ``/ask-rest``: ``ask`` over the a2a-sdk 0.3's own HTTP+JSON server (``A2ARESTFastAPIApplication``,
  ``{url}/ask-rest/v1/message:send``); its card's ``preferredTransport`` is ``HTTP+JSON``.

All advertise ``capabilities.streaming: true`` and ``protocolVersion: 0.3.0``; the first two
``preferredTransport: JSONRPC``.

``POST /_admin/forget`` makes every agent forget its tasks, as a restart would (a continuation
of a forgotten task then fails the way this server fails it).
"""
from __future__ import annotations

import argparse

from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2ARESTFastAPIApplication, A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentSkill,
    Part,
    Task,
    TaskState,
    TaskStatus,
    TextPart,
)

from port0_server import serve  # on PYTHONPATH (support/peers/, see support/interop.py); shared with the other peer agents


def _text_part(text: str) -> Part:
    return Part(root=TextPart(text=text))


async def _start_task(context: RequestContext, event_queue: EventQueue) -> TaskUpdater:
    """Enqueue the Task for a new request (0.3 requires the Task before any update)."""
    if context.current_task is None:
        await event_queue.enqueue_event(Task(
            id=context.task_id,
            context_id=context.context_id,
            status=TaskStatus(state=TaskState.submitted),
            history=[context.message] if context.message else [],
        ))
    return TaskUpdater(event_queue, context.task_id, context.context_id)


class EchoExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        updater = await _start_task(context, event_queue)
        await updater.start_work()
        await updater.add_artifact([_text_part(f"echo03[{context.context_id}]: {text}")],
                                   name="echo")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


class AskExecutor(AgentExecutor):
    QUESTION = "which city?"

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        if context.current_task is None:
            updater = await _start_task(context, event_queue)
            await updater.requires_input(updater.new_agent_message([_text_part(self.QUESTION)]),
                                         final=True)
            return
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work()
        await updater.add_artifact([_text_part(f"continued03[{context.context_id}]: {text}")],
                                   name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


class ForgettingTaskStore(TaskStore):
    """An in-memory task store that :meth:`forget` empties, as a restart would."""

    def __init__(self) -> None:
        self.inner = InMemoryTaskStore()

    def forget(self) -> None:
        self.inner = InMemoryTaskStore()

    async def save(self, task, context=None) -> None:
        await self.inner.save(task, context)

    async def get(self, task_id, context=None):
        return await self.inner.get(task_id, context)

    async def delete(self, task_id, context=None) -> None:
        await self.inner.delete(task_id, context)


AGENTS = {  # name -> (executor, description, transport)
    "echo": (EchoExecutor, "Echoes the text back, tagged with the contextId (a2a-sdk 0.3).", "JSONRPC"),
    "ask": (AskExecutor, "Asks 'which city?' (input-required), then completes (a2a-sdk 0.3).", "JSONRPC"),
    "ask-rest": (AskExecutor, "Asks 'which city?', then completes, over HTTP+JSON (a2a-sdk 0.3).", "HTTP+JSON"),
}


def build_card(name: str, description: str, base_url: str, transport: str = "JSONRPC") -> AgentCard:
    return AgentCard(
        name=f"{name}03",
        description=description,
        url=f"{base_url}/{name}/" if transport == "JSONRPC" else f"{base_url}/{name}",
        version="0.3.26-test",
        preferred_transport=transport,
        protocol_version="0.3.0",
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id=name, name=name, description=description, tags=["test", name])],
    )


def build_app(base_url: str) -> Starlette:
    mounts, stores = [], []
    for name, (executor_cls, description, transport) in AGENTS.items():
        stores.append(ForgettingTaskStore())
        handler = DefaultRequestHandler(agent_executor=executor_cls(), task_store=stores[-1])
        card = build_card(name, description, base_url, transport)
        server = A2AStarletteApplication if transport == "JSONRPC" else A2ARESTFastAPIApplication
        # build() with the default paths: '/' for JSON-RPC ('/v1/...' for HTTP+JSON),
        # '/.well-known/agent-card.json' (and the 0.2-era '/.well-known/agent.json' for JSON-RPC);
        # Mount prefixes them with '/{name}'.
        mounts.append(Mount(f"/{name}", app=server(agent_card=card, http_handler=handler).build()))

    async def forget(_request):
        for store in stores:
            store.forget()
        return JSONResponse({"forgotten": len(stores)})

    return Starlette(routes=[Route("/_admin/forget", forget, methods=["POST"]), *mounts])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args()
    serve(lambda host, port: build_app(f"http://{host}:{port}"), args.host)


if __name__ == "__main__":
    main()
