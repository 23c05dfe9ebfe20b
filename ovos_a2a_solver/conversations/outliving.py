# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Tasks that outlived their turn: a turn whose deadline passed while the agent worked on
leaves the task (or, before the agent named it, the message) pending in the session's
conversation. Its answer is delivered before the session's next one once the task settled
(:meth:`OutlivingTasks.earlier_answer`), or announced when it is ready
(:meth:`OutlivingTasks.answer_when_ready`); a task that ended without an answer, or that the
agent no longer knows, is let go.

A message can outlive its turn before it is sent: kept while the person signs in, it is sent
once they have, and its answer is held (:meth:`OutlivingTasks.hold`) and delivered the same
two ways.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from a2a.types import ListTasksResponse, StreamResponse, Task
from a2a.utils.errors import A2AError, TaskNotFoundError

from ovos_a2a_solver.answers.assembler import AnswerAssembler
from ovos_a2a_solver.answers.revisions import Revision
from ovos_a2a_solver.conversations.conversation_store import Conversation, ConversationStore
from ovos_a2a_solver.conversations.effects import ENDED_WITHOUT_ANSWER, Outcome
from ovos_a2a_solver.states import SETTLED, WAITING_FOR_USER

LOG = logging.getLogger("ovos_a2a_solver")

#: Seconds between the first reads of a task that outlived its turn, while its answer is awaited (doubling).
FIRST_POLL = 0.2
#: Longest pause between those reads.
PENDING_POLL_MAX = 15.0
#: The caller's newest tasks searched for the one a pending message started.
TASKS_SEARCHED = 50
#: Answers held for one session at most (the oldest go first).
HELD_MOST = 8


class EarlierAnswer:
    """The answer of a task that outlived its turn, read from the task once it settled (or an
    answer held: see :meth:`said`)."""

    def __init__(self, task, assembler: AnswerAssembler) -> None:
        # its pieces keyed apart from the next answer's, which may reuse the same artifact ids
        self.revisions = [Revision(f"earlier:{r.key}", r.text, r.append, r.last)
                          for r in assembler.feed(StreamResponse(task=task)) + assembler.finish()]
        self.text = assembler.final_text()
        self.waiting = task.status.state in WAITING_FOR_USER

    @classmethod
    def said(cls, text: str, waiting: bool) -> "EarlierAnswer":
        """An answer held as text; ``waiting``: it asks the user (their next words answer it)."""
        earlier = cls.__new__(cls)
        earlier.revisions, earlier.text, earlier.waiting = [Revision("earlier:held", text, False, True)], text, waiting
        return earlier


class OutlivingClient(Protocol):
    """What :class:`OutlivingTasks` asks of the client whose turns the tasks outlived."""

    base_url: str
    conversation_key: str
    conversations: ConversationStore

    @property
    def closed(self) -> bool:
        """Whether the client was closed (no more reads)."""

    def conversation(self, session_id: str) -> Conversation | None:
        """Where the session stands with the agent."""

    async def read_task(self, task_id: str, until: float | None = None) -> Task:
        """The task as the agent has it now (GetTask), by ``until`` (else within the client's deadline)."""

    async def newest_tasks(self, context_id: str, count: int, until: float | None = None) -> ListTasksResponse:
        """The caller's ``count`` newest tasks in the context (ListTasks), by ``until`` (else within the
        client's deadline)."""

    def new_assembler(self) -> AnswerAssembler:
        """An answer's assembler within the client's limits."""

    def record(self, session_id: str, outcome: Outcome, context_id: str, task_id: str) -> None:
        """Keep of the session's conversation what ``outcome`` leaves of it."""


class OutlivingTasks:
    """The tasks of one client's sessions that outlived their turns."""

    def __init__(self, client: OutlivingClient) -> None:
        self.client = client
        self._held: dict[str, list[tuple[str, bool]]] = {}  # session -> answers ready: (text, asks the user)
        self._coming: dict[str, "asyncio.Future"] = {}  # session -> the work whose answers will be held

    def hold(self, session_id: str | None, text: str, waiting: bool = False) -> None:
        """Keep ``text`` to deliver as the answer of a message that outlived its turn (``waiting``:
        it asks the user)."""
        if session_id is not None and text.strip():
            held = self._held.setdefault(session_id, [])
            held.append((text, waiting))
            del held[:-HELD_MOST]

    def expect(self, session_id: str | None, work: "asyncio.Future") -> None:
        """``work`` holds answers of ``session_id`` when it ends: :meth:`answer_when_ready` waits for it."""
        if session_id is not None:
            self._coming[session_id] = work
            work.add_done_callback(lambda done: self._coming.pop(session_id, None) if
                                   self._coming.get(session_id) is done else None)

    def take_held(self, session_id: str | None) -> "EarlierAnswer | None":
        """The answers held for ``session_id`` (as one), taken: delivered once."""
        held = self._held.pop(session_id, None) if session_id is not None else None
        if not held:
            return None
        return EarlierAnswer.said("\n".join(text for text, _ in held), held[-1][1])

    async def earlier_answer(self, session_id: str | None, until: float | None = None) -> "EarlierAnswer | None":
        """The answer of the session's task that outlived its turn, once it has one.

        ``until``: the event loop's time at which the turn asking ends; every look-up made
        here ends by then (without it, each has the client's own deadline).

        A task still working stays bound (its answer comes with a later turn); one that
        ended without an answer, or that the agent no longer knows, is let go.
        """
        held = self.take_held(session_id)
        if held is not None:
            return held
        client = self.client
        conv = client.conversation(session_id) if session_id is not None else None
        if conv is None or not (conv.pending_task_id or conv.pending_message_id):
            return None
        key = client.conversation_key
        task_id = conv.pending_task_id or await self._task_of_message(session_id, conv, until)
        if task_id is None:
            return None
        try:
            task = await client.read_task(task_id, until)
        except TaskNotFoundError:
            LOG.info("%s no longer knows task %s, which outlived its turn", client.base_url, task_id)
            client.conversations.set_pending(key, session_id, conv.context_id, None)
            return None
        except A2AError as exc:  # the agent cannot be asked now: ask again next turn
            LOG.info("could not ask %s about task %s: %s", client.base_url, task_id, exc)
            return None
        if task.status.state not in SETTLED or not client.conversations.take_pending(key, session_id, task_id):
            return None  # still working, or its answer was delivered meanwhile (see :meth:`answer_when_ready`)
        if task.status.state in ENDED_WITHOUT_ANSWER:
            LOG.warning("%s %s task %s, which outlived its turn", client.base_url,
                        ENDED_WITHOUT_ANSWER[task.status.state], task_id)
            return None
        earlier = EarlierAnswer(task, client.new_assembler())
        if earlier.waiting:  # its question is the answer; the user's next message answers it
            client.record(session_id, Outcome.WAITING, task.context_id or conv.context_id, task.id)
        return earlier

    async def _task_of_message(self, session_id: str, conv: Conversation, until: float | None = None) -> str | None:
        """The id of the task that the session's pending message started, found among the
        caller's newest tasks (ListTasks, A2A 1.0) by the message in its history, and bound
        in its place; ``None`` (the message let go) when it cannot be found."""
        client = self.client
        message_id, key = conv.pending_message_id, client.conversation_key
        try:
            listed = await client.newest_tasks(conv.context_id, TASKS_SEARCHED, until)
        except (A2AError, NotImplementedError) as exc:
            LOG.info("cannot look up the task of message %s at %s: %s", message_id, client.base_url, exc)
            listed = None
        for task in listed.tasks if listed is not None else ():
            if any(m.message_id == message_id for m in task.history):
                client.conversations.set_pending(key, session_id, task.context_id, task.id)
                return task.id
        if listed is not None:
            LOG.info("%s has no task for message %s, which outlived its turn", client.base_url, message_id)
        client.conversations.set_pending(key, session_id, conv.context_id, None)
        return None

    async def answer_when_ready(self, session_id: str, task_id: str, within: float) -> str | None:
        """Wait (reading the task, less and less often) until the session's pending task
        (``task_id``, or any) settles; take its answer. ``None`` if it ended without one, was
        delivered another way (the session's next utterance), or is not ready ``within`` seconds."""
        client = self.client
        loop = asyncio.get_running_loop()
        end, delay = loop.time() + within, FIRST_POLL
        coming = self._coming.get(session_id)
        if coming is not None and not task_id:  # a message kept while the person signs in: sent once they have
            try:
                await asyncio.wait_for(asyncio.shield(coming), within)
            except (asyncio.TimeoutError, Exception) as exc:  # its own failure is logged where it ran
                LOG.debug("the answer awaited for session %s did not come: %r", session_id, exc)
            held = self.take_held(session_id)
            if held is not None:
                return held.text
        while loop.time() < end and not client.closed:
            conv = client.conversation(session_id)
            if conv is None or not (conv.pending_task_id or conv.pending_message_id) \
                    or (task_id and conv.pending_task_id != task_id):
                return None
            earlier = await self.earlier_answer(session_id)
            if earlier is not None:
                return earlier.text
            await asyncio.sleep(min(delay, max(0.0, end - loop.time())))
            delay = min(delay * 2, PENDING_POLL_MAX)
        return None
