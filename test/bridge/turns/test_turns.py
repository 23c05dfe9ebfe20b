"""Bridge: how a persona turn reaches the event loop (its thread, its hand-offs)."""
import asyncio
import threading
import time

import pytest

from ovos_a2a_solver.bridge.backends.echo import EchoBackend
from ovos_a2a_solver.bridge.backends.scenarios import ScenarioBackend
from ovos_a2a_solver.bridge.turns.turn import TURN_THREADS, DaemonThreads, Flag, Mailbox, Turn, TurnEvent, TurnEventKind

from support.waiting import wait_until


class WakeCountingLoop(asyncio.SelectorEventLoop):
    """A real event loop that counts the wake-ups other threads ask of it."""

    def __init__(self) -> None:
        super().__init__()
        self.wakeups = 0

    def call_soon_threadsafe(self, callback, *args, context=None):
        self.wakeups += 1
        return super().call_soon_threadsafe(callback, *args, context=context)


def run_on(loop: asyncio.AbstractEventLoop, coroutine):
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


async def events_of(turn: Turn) -> list:
    await asyncio.wait_for(turn.ended.wait(), 10)
    events = []
    while not turn.events.empty():
        events.append(turn.events.get_nowait())
    return events


def turn_threads() -> set[threading.Thread]:
    return {thread for thread in threading.enumerate() if thread.name == TURN_THREADS.name}


def test_a_turn_runs_on_a_thread_an_earlier_turn_left_idle():
    async def scenario():
        loop = asyncio.get_running_loop()
        threads = []

        def produce():
            threads.append(threading.current_thread())
            yield "said"

        await events_of(Turn(produce, loop).start())
        await asyncio.to_thread(wait_until, lambda: TURN_THREADS.idle, "a turn thread to wait for the next turn")
        before = turn_threads()
        for _ in range(3):
            await events_of(Turn(produce, loop).start())
            await asyncio.to_thread(wait_until, lambda: TURN_THREADS.idle, "a turn thread to wait for the next turn")
        return threads, before, turn_threads()

    threads, before, after = asyncio.run(scenario())
    assert threading.main_thread() not in threads
    # no thread was started for the later turns (an idle one of an earlier turn may have ended meanwhile: the
    # turn threads are the process's, and a bridge served in this process by an earlier test leaves some)
    assert set(threads[1:]) <= before and not after - before


def test_an_idle_turn_thread_ends_after_its_idle_time_and_a_new_one_takes_the_next_job():
    pool = DaemonThreads("test-turn", idle_seconds=0.2)
    ran = []
    pool.submit(lambda: ran.append(threading.current_thread()))
    first = wait_until(lambda: ran[:1], "the first job to run")[0]
    wait_until(lambda: not first.is_alive(), "the idle thread to end", timeout=10)
    pool.submit(lambda: ran.append(threading.current_thread()))
    wait_until(lambda: len(ran) == 2, "the second job to run")
    assert ran[1] is not first and ran[1].daemon and ran[1].name == "test-turn"


def test_a_job_that_raises_leaves_its_thread_serving_the_next_job():
    pool = DaemonThreads("test-turn", idle_seconds=5)
    ran = []

    def fails():
        ran.append(threading.current_thread())
        raise RuntimeError("a job that raises")

    pool.submit(fails)
    wait_until(lambda: ran and pool.idle == 1, "the failing job to run and its thread to wait again")
    pool.submit(lambda: ran.append(threading.current_thread()))
    wait_until(lambda: len(ran) == 2, "the next job to run")
    assert ran[1] is ran[0]


def test_many_jobs_at_once_each_run_once():
    pool = DaemonThreads("test-turn-many", idle_seconds=0.05)
    done, lock = [], threading.Lock()

    def job(n):
        time.sleep(0.001)
        with lock:
            done.append(n)

    for round_ in range(5):  # idle threads time out between rounds, and are taken while they do
        for n in range(40):
            pool.submit(lambda n=n + 40 * round_: job(n))
        time.sleep(0.05)
    wait_until(lambda: len(done) >= 200, "200 jobs to run", timeout=20)
    wait_until(lambda: not [t for t in threading.enumerate() if t.name == pool.name], "every thread of the pool to end",
               timeout=20)  # no thread left to run a job again
    assert sorted(done) == list(range(200))


def test_a_burst_of_sentences_wakes_the_loop_once_and_arrives_whole_and_in_order():
    loop = WakeCountingLoop()

    async def scenario():
        burst_said = threading.Event()

        def produce():
            for n in range(200):
                yield f"Sentence {n}."
            burst_said.set()

        turn = Turn(produce, loop).start()
        assert burst_said.wait(10)  # the loop is kept busy here while the thread says everything
        return await events_of(turn)

    events = run_on(loop, scenario())
    assert [e.text for e in events[:-1]] == [f"Sentence {n}." for n in range(200)]
    assert events[-1].kind is TurnEventKind.DONE
    assert loop.wakeups <= 2  # one per hand-off the loop had not taken yet, not one per sentence


def test_a_reply_computed_at_once_runs_on_the_loop_and_is_queued_when_start_returns():
    loop = WakeCountingLoop()

    async def scenario():
        threads = []

        def produce():
            threads.append(threading.current_thread())
            yield "echo: hello"

        turn = Turn(produce, loop).start(at_once=True)
        queued = [turn.events.get_nowait() for _ in range(turn.events.qsize())]
        return threads, queued, turn.running

    threads, queued, running = run_on(loop, scenario())
    assert threads == [threading.main_thread()]
    assert [(e.kind, e.text) for e in queued] == [(TurnEventKind.SENTENCE, "echo: hello"), (TurnEventKind.DONE, "")]
    assert not running and loop.wakeups == 0


def test_a_reply_computed_at_once_that_raises_is_the_turns_error():
    async def scenario():
        def produce():
            raise RuntimeError("no answer here")
            yield  # a generator

        return await events_of(Turn(produce, asyncio.get_running_loop()).start(at_once=True))

    events = asyncio.run(scenario())
    assert [e.kind for e in events] == [TurnEventKind.ERROR] and "no answer here" in str(events[0].error)


@pytest.mark.parametrize("text, at_once", [("hello", True), ("fail", True), ("ask:which one?", True),
                                           ("sleep:1", False), ("slow:0.1", False), ("sleep", False)])
def test_the_echo_backend_answers_at_once_unless_it_is_told_to_wait(text, at_once):
    assert EchoBackend().answers_at_once(text) is at_once


def test_the_echo_backend_with_a_call_log_and_the_scenarios_never_answer_at_once(tmp_path):
    assert EchoBackend(call_log=str(tmp_path / "calls.jsonl")).answers_at_once("hello") is False
    assert ScenarioBackend().answers_at_once("hello") is False


def test_a_turns_mailbox_hands_events_in_order_and_a_reader_given_up_leaves_it_usable():
    async def scenario():
        box = Mailbox()
        assert box.empty()
        with pytest.raises(asyncio.QueueEmpty):
            box.get_nowait()
        reader = asyncio.ensure_future(box.get())
        await asyncio.sleep(0)
        assert not reader.done()  # nothing yet: the reader waits
        first, second = TurnEvent(TurnEventKind.SENTENCE, "a"), TurnEvent(TurnEventKind.DONE)
        box.put_nowait(first)
        box.put_nowait(second)
        assert await asyncio.wait_for(reader, 5) is first
        assert box.get_nowait() is second and box.empty()
        with pytest.raises(asyncio.TimeoutError):  # a reader that gives up (the heartbeat's wait)
            await asyncio.wait_for(box.get(), 0.01)
        box.put_nowait(first)
        assert await asyncio.wait_for(box.get(), 5) is first

    asyncio.run(scenario())


def test_a_flag_wakes_every_waiter_when_set_and_can_be_cleared_and_set_again():
    async def scenario():
        flag = Flag()
        waiters = [asyncio.ensure_future(flag.wait()) for _ in range(3)]
        await asyncio.sleep(0)
        assert not flag.is_set() and not any(w.done() for w in waiters)
        with pytest.raises(asyncio.TimeoutError):  # a waiter that gives up does not disturb the others
            await asyncio.wait_for(flag.wait(), 0.01)
        flag.set()
        assert await asyncio.wait_for(asyncio.gather(*waiters), 5) == [True, True, True]
        assert flag.is_set() and await flag.wait()
        flag.clear()
        waiter = asyncio.ensure_future(flag.wait())
        await asyncio.sleep(0)
        assert not waiter.done()
        flag.set()
        assert await asyncio.wait_for(waiter, 5)

    asyncio.run(scenario())
