"""read_ahead: an async iterator read by a task of its own, its reader told when nothing came
for a while; its error is the reader's, and leaving early ends it (its cleanup runs)."""
import asyncio
import time

import pytest

from ovos_a2a_solver.answers.read_ahead import QUIET, read_ahead


def test_quiet_comes_when_patience_runs_out_and_the_items_follow_in_order():
    async def items():
        yield 1
        await asyncio.sleep(0.3)
        yield 2

    async def read():
        return [item async for item in read_ahead(items(), lambda: 0.05)]

    got = asyncio.run(read())
    assert got[0] == 1 and got[-1] == 2 and QUIET in got and set(got[1:-1]) == {QUIET}


def test_the_last_item_comes_when_patience_runs_out_as_the_items_end():
    # the patience ran out in the very loop turn in which the reading task put the last item and
    # ended: the item was dropped (the reader saw the task done before the item was taken)
    calls = []

    async def items():
        yield 1
        await asyncio.sleep(0.01)
        yield 2

    def patience() -> float:
        calls.append(1)
        if len(calls) == 2:  # waiting for the 2nd item: hold the loop until both timers are due
            asyncio.get_running_loop().call_soon(time.sleep, 0.1)
        return 0.02

    async def read():
        return [item async for item in read_ahead(items(), patience)]

    assert asyncio.run(read()) == [1, 2]


def test_without_patience_only_the_items_come_and_the_error_is_the_readers():
    async def items():
        yield 1
        await asyncio.sleep(0.1)
        raise ValueError("broken")

    async def read(got):
        async for item in read_ahead(items(), lambda: None):
            got.append(item)

    got = []
    with pytest.raises(ValueError, match="broken"):
        asyncio.run(read(got))
    assert got == [1]


def test_leaving_early_ends_the_reading_and_its_cleanup_runs_first():
    ended = []

    async def items():
        try:
            yield 1
            await asyncio.sleep(30)
            yield 2
        finally:
            await asyncio.sleep(0.05)  # a cleanup that awaits (a CancelTask)
            ended.append("cleaned up")

    async def read():
        reading = read_ahead(items(), lambda: None)
        assert await anext(reading) == 1
        await reading.aclose()
        return list(ended)

    assert asyncio.run(read()) == ["cleaned up"]
