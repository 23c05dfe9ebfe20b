"""``AsyncA2AClient`` and ``A2AClient`` are two faces of one core: the same answers, from the
same agents, over every binding; the async face needs no thread of its own.

Real a2a-sdk test agents on loopback (``test/support/a2a_agent.py``).
"""
from __future__ import annotations

import asyncio
import threading

import pytest
from a2a.client import A2AClientTimeoutError
from a2a.types import TaskState
from a2a.utils.errors import TaskNotFoundError

from ovos_a2a_solver import A2AClient, AgentTaskError, AsyncA2AClient


def run(coro):
    return asyncio.run(coro)


@pytest.mark.parametrize("name", ["echo", "rest-only", "grpc-only", "v03"])
def test_both_faces_give_the_same_answer_over_every_binding(agent, name):
    url = agent.agent(name)

    async def ask_async() -> tuple[str, str]:
        async with AsyncA2AClient(url) as client:
            first = await client.send_task("hello", session_id="s")
            second = await client.send_task("again", session_id="s")
            return first, second

    with A2AClient(url) as client:
        sync_first, sync_second = client.send_task("hello", session_id="s"), client.send_task("again", session_id="s")
    async_first, async_second = run(ask_async())
    for first, second in ((sync_first, sync_second), (async_first, async_second)):
        assert first.startswith("echo[") and first.endswith("]: hello"), first
        assert second == first.replace("hello", "again")  # the same remote conversation both times


def test_the_async_face_runs_on_the_callers_loop_without_a_thread(agent):
    threads_before = {t.name for t in threading.enumerate()}

    async def go() -> str:
        loop = asyncio.get_running_loop()
        async with AsyncA2AClient(agent.agent("echo")) as client:
            card = await client.fetch_agent_card()
            answer = await client.send_task("from asyncio")
            assert asyncio.get_running_loop() is loop
            return f"{card.name}: {answer}"

    text = run(go())
    assert text.startswith("echo: echo[") and text.endswith("]: from asyncio")
    assert "ovos-a2a-loop" not in {t.name for t in threading.enumerate()} - threads_before


def test_async_streaming_yields_each_chunk_in_order(agent):
    async def go() -> list[str]:
        async with AsyncA2AClient(agent.agent("stream-chunks"), streaming=True) as client:
            return [piece async for piece in client.stream_task("tell me")]

    pieces = run(go())
    assert len(pieces) > 1
    with A2AClient(agent.agent("stream-chunks"), streaming=True) as client:
        assert "".join(pieces) == "".join(client.stream_task("tell me"))


def test_async_input_required_continues_the_same_task(agent):
    async def go():
        async with AsyncA2AClient(agent.agent("ask")) as client:
            question = await client.send_task("weather", session_id="s")
            waiting = client.conversation("s")
            answer = await client.send_task("Paris", session_id="s")
            return question, waiting, answer, client.conversation("s")

    question, waiting, answer, after = run(go())
    assert question == "which city?" and waiting.task_id
    assert answer.startswith("continued[") and answer.endswith("]: Paris")
    assert after.task_id is None and after.context_id == waiting.context_id


def test_async_task_calls_and_errors_are_the_sdks(agent):
    async def go():
        async with AsyncA2AClient(agent.agent("echo")) as client:
            updates = []
            async for _ in client.stream_task("hello", on_update=updates.append):
                pass
            task = await client.get_task(updates[-1].task_id)
            assert updates[-1].state == TaskState.TASK_STATE_COMPLETED and updates[-1].state_name == "completed"
            assert {u.state for u in updates} <= set(TaskState.values()) - {TaskState.TASK_STATE_UNSPECIFIED}
            listed = await client.list_tasks(page_size=100)
            with pytest.raises(TaskNotFoundError):
                await client.get_task("no-such-task")
            return task, listed

    task, listed = run(go())
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert task.id in {t.id for t in listed.tasks}
    with pytest.raises(AgentTaskError) as failed:
        run(_send(agent.agent("fail")))
    assert failed.value.state == "failed" and failed.value.reason == "the backend exploded"


def test_async_deadline_is_one_for_the_whole_exchange(agent):
    async def go():
        async with AsyncA2AClient(agent.agent("echo"), timeout=0.5) as client:
            await client.send_task("sleep:3")

    with pytest.raises(A2AClientTimeoutError):
        run(go())


async def _send(url: str) -> str:
    async with AsyncA2AClient(url) as client:
        return await client.send_task("hello")
