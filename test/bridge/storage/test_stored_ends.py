# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Bridge: a finished turn waits for the a2a-sdk to store its task's settled end
(``storage.stored_ends.StoredEnds.awaiting``), and only then lets go of its message."""
from __future__ import annotations

import asyncio

import pytest
from a2a.types import Task, TaskState, TaskStatus

from ovos_a2a_solver.bridge.storage.owners import call_context_for
from ovos_a2a_solver.bridge.storage.stored_ends import StoredEnds

OWNER = "alice"


def settled(task_id: str) -> Task:
    return Task(id=task_id, context_id="c", status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED))


def test_the_end_of_the_block_waits_for_the_settled_save():
    async def scenario() -> None:
        ends, loop = StoredEnds(), asyncio.get_running_loop()
        began = loop.time()
        async with ends.awaiting(OWNER, "t1", timeout=30):
            loop.call_later(0.1, ends.saved, settled("t1"), call_context_for(OWNER))
        assert 0.05 < loop.time() - began < 5  # it waited for the save, not for the timeout

    asyncio.run(scenario())


def test_an_end_not_stored_in_time_is_waited_for_no_longer_than_the_timeout():
    async def scenario() -> None:
        ends, loop = StoredEnds(), asyncio.get_running_loop()
        began = loop.time()
        async with ends.awaiting(OWNER, "t1", timeout=0.2):
            ends.saved(settled("t1"), call_context_for("bob"))  # another owner's task of the same id
        assert loop.time() - began >= 0.2

    asyncio.run(scenario())


@pytest.mark.parametrize("way_out", ["raised", "handed on"])
def test_a_block_that_raised_or_handed_its_turn_on_does_not_wait(way_out):
    async def scenario() -> None:
        ends, loop = StoredEnds(), asyncio.get_running_loop()
        began = loop.time()
        try:
            async with ends.awaiting(OWNER, "t1", timeout=30) as awaited:
                if way_out == "raised":
                    raise RuntimeError("the executor raised")
                awaited.hand_on()
        except RuntimeError:
            pass
        assert loop.time() - began < 5

    asyncio.run(scenario())


def test_an_earlier_turns_end_does_not_drop_a_later_turns_wait():
    """Two turns of one task (a follow-up begun while the first still waits): the first's end
    leaves the second's expectation, which is then told of the save."""
    async def scenario() -> None:
        ends, loop = StoredEnds(), asyncio.get_running_loop()
        first = ends.awaiting(OWNER, "t1", timeout=0.05)
        await first.__aenter__()
        async with ends.awaiting(OWNER, "t1", timeout=30):
            await first.__aexit__(None, None, None)  # timed out, and gone
            loop.call_later(0.1, ends.saved, settled("t1"), call_context_for(OWNER))
            began = loop.time()
        assert loop.time() - began < 5

    asyncio.run(scenario())
