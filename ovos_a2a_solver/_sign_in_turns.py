# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The turns of an agent that needs the person to sign in (see ``agent.sign_in``).

A turn finds out in one of three ways: the agent's card requires a sign-in the person has not made
(or can no longer refresh), and nothing is sent (``SignInRequiredError``); the agent refused their
token (HTTP 401: taken away at the provider, which refused its refresh too); or the agent asked for
one mid-task (``TASK_STATE_AUTH_REQUIRED``) while the person had no token for the sign-in its card
declares. Either way the turn says what to do ("To let me use the calendar agent, go to
example.com/device and enter the code W-D-J-B M-J-H-T."), tells the listener (the engine puts
``verification_uri_complete`` on the messagebus), and waits for the person within the turn's
deadline. Signed in in time, it sends the message (an auth-required task is continued with it,
as an input-required one is by the user's next words) and its answer follows in the same turn;
otherwise the message is kept and the turn ends (``SignInPendingError``): it is sent once they
have signed in, and its answer is delivered as a task's that outlived its turn is
(``conversations.outliving``). A sign-in that was denied or whose code expired ends the turn with
``SignInError`` (whose ``said`` tells the person). A person who speaks again while their sign-in
is awaited joins it: the same code is said again, no second one asked for.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from typing import Protocol

import httpx
from a2a.client import A2AClientTimeoutError
from a2a.types import TaskState
from a2a.utils.errors import A2AError

from ovos_a2a_solver.agent.exceptions import SignInError, SignInPendingError, SignInRequiredError, StillWorkingError
from ovos_a2a_solver.agent.request_failures import http_status
from ovos_a2a_solver.agent.sign_in import PersonToken, SignInEvent, SignIns, SignInUnderWay
from ovos_a2a_solver.agent.tokens import TokenStore, for_person
from ovos_a2a_solver.answers.assembler import AnswerAssembler
from ovos_a2a_solver.answers.revisions import Revision
from ovos_a2a_solver.conversations.outliving import OutlivingTasks

LOG = logging.getLogger("ovos_a2a_solver")


class SignInClient(Protocol):
    """What :class:`SignInTurns` asks of the client whose turns they are."""

    base_url: str

    def assembler(self) -> AnswerAssembler:
        """A new answer's assembler (the turn's ``on_update`` set on it by the caller)."""

    def revisions(self, answer: AnswerAssembler, text: str, session_id: str | None, streaming: bool,
                  lang: str | None, until: float) -> AsyncIterator[Revision]:
        """One message to the agent and its answer, as the client asks (``_revisions``)."""

    async def sign_in(self) -> PersonToken | None:
        """The sign-in the agent's card requires or declares, if the credentials answer it."""

    @property
    def sign_in_http(self) -> httpx.AsyncClient:
        """The HTTP client of the authorization servers."""

    async def answer(self, text: str, session_id: str | None, lang: str | None) -> str:
        """A whole turn: ``text`` sent, its answer (``send_task``)."""

    def waits_for_user(self, session_id: str | None) -> bool:
        """Whether the agent waits for the session's user (an open task)."""

    def person(self, session_id: str | None) -> str:
        """Who the session's requests are for (``agent.tokens.person``)."""


class SignInTurns:
    """The sign-ins of one client's turns, and the messages they keep."""

    def __init__(self, client: SignInClient, store: TokenStore, outliving: OutlivingTasks,
                 listener: Callable[[SignInEvent], None] | None = None) -> None:
        self.client, self.store, self.outliving, self.listener = client, store, outliving, listener
        self.sign_ins = SignIns(store)

    async def revisions(self, answer: AnswerAssembler, text: str, session_id: str | None, streaming: bool,
                        lang: str | None, until: float, said: list[str],
                        assembler: Callable[[], AnswerAssembler]) -> AsyncIterator[Revision]:
        """The client's revisions of the message, with the person signed in first when the agent
        needs it (see the module). ``said`` gets the final text of each part the turn says, in
        order (an auth-required question, the prompt, the answer); ``assembler`` makes the answer's
        assembler of the message sent after the sign-in."""
        async with aclosing(self._kept_first(session_id, until, said)) as kept:
            async for revision in kept:
                yield revision
        try:
            async with aclosing(self.client.revisions(answer, text, session_id, streaming, lang, until)) as parts:
                async for revision in parts:
                    yield revision
        except SignInRequiredError as needed:
            sign_in = needed.sign_in
        except A2AError as refused:
            sign_in = await self._refused_for_want_of(refused, answer, session_id)
            if sign_in is None:
                raise
        else:
            sign_in = await self._asked_for(answer, session_id)
            said.append(answer.final_text())
            if sign_in is None:
                return
            answer = assembler()
        async with aclosing(self._signing_in(sign_in, text, session_id, lang, until, said)) as prompts:
            async for revision in prompts:
                yield revision
        async with aclosing(self._kept_first(session_id, until, said)) as kept:
            async for revision in kept:
                yield revision
        async with aclosing(self.client.revisions(answer, text, session_id, streaming, lang, until)) as parts:
            async for revision in parts:
                yield revision
        said.append(answer.final_text())

    async def _kept_first(self, session_id: str | None, until: float, said: list[str]) -> AsyncIterator[Revision]:
        """The answers of messages kept while the person signed in, which are being sent now that
        they have: waited for (within the turn) and said before this turn's own."""
        loop = asyncio.get_running_loop()
        for sending in self.sign_ins.delivering(f"{self.client.person(session_id)}\n"):
            if sending is asyncio.current_task():
                continue  # this turn is one of the sending
            try:
                await asyncio.wait_for(asyncio.shield(sending), max(0.0, until - loop.time()))
            except asyncio.TimeoutError:
                break  # still on its way: it comes with a later turn
        held = self.outliving.take_held(session_id)
        if held is not None:
            said.append(held.text)
            for revision in held.revisions:
                yield revision

    async def _refused_for_want_of(self, refused: A2AError, answer: AnswerAssembler,
                                   session_id: str | None) -> PersonToken | None:
        """The sign-in to run after the agent refused the message (HTTP 401) before answering it:
        the person's token was taken away (revoked at the provider, which refused its refresh too)."""
        if http_status(refused) != 401 or answer.events:
            return None
        sign_in = await self._not_signed_in(session_id)
        if sign_in is None:
            return None  # no sign-in, or a token it still has: the refusal is the agent's own
        LOG.info("%s refused the person's token, and it could not be refreshed: they sign in again",
                 self.client.base_url)
        return sign_in

    async def _asked_for(self, answer: AnswerAssembler, session_id: str | None) -> PersonToken | None:
        """The sign-in to run after an answer: the agent asked for one (auth-required), its card
        declares one the credentials answer, and the person has not signed in for it."""
        if answer.state != TaskState.TASK_STATE_AUTH_REQUIRED or not answer.task_id:
            return None
        # None too when signed in, and asked all the same: the agent's words say why
        return await self._not_signed_in(session_id)

    async def _not_signed_in(self, session_id: str | None) -> PersonToken | None:
        """The sign-in the agent's card declares, unless the session's person is signed in for it."""
        sign_in = await self.client.sign_in()
        if sign_in is None:
            return None
        with for_person(self.client.person(session_id)):
            if await _signed_in(sign_in):
                return None
        return sign_in

    async def _signing_in(self, sign_in: PersonToken, text: str, session_id: str | None, lang: str | None,
                          until: float, said: list[str]) -> AsyncIterator[Revision]:
        """Say what to do, and wait for the person within the turn (see the module); nothing when
        they signed in meanwhile (a sign-in under way ended between the refusal and now)."""
        loop = asyncio.get_running_loop()
        try:
            with for_person(self.client.person(session_id)):
                async with asyncio.timeout_at(until):
                    if await _signed_in(sign_in):
                        return
                    under_way, new = await self.sign_ins.begin(sign_in, self.client.sign_in_http)
        except asyncio.TimeoutError:
            raise A2AClientTimeoutError(f"the sign-in to {sign_in.grant.agent} could not be started in time") from None
        prompt = under_way.prompt
        if new:
            under_way.done.add_done_callback(lambda done: self._tell(_ending(done), under_way, session_id))
        spoken = prompt.spoken() if new else prompt.reminder()
        said.append(spoken)
        self._tell("started" if new else "waiting", under_way, session_id)
        yield Revision(f"sign-in:{id(under_way)}", spoken, False, True)
        try:
            await asyncio.wait_for(asyncio.shield(under_way.done), max(0.0, until - loop.time()))
        except asyncio.TimeoutError:
            under_way.keep(text, lang)
            self._deliver_when_signed_in(under_way, session_id)
            raise SignInPendingError(f"{self.client.base_url} waits for the person to sign in at "
                                     f"{prompt.verification_uri}; the message is sent once they have", prompt) from None

    def _deliver_when_signed_in(self, under_way: SignInUnderWay, session_id: str | None) -> None:
        if under_way.delivery is None:
            under_way.delivery = asyncio.ensure_future(self._send_kept(under_way, session_id))
            self.outliving.expect(session_id, under_way.delivery)

    async def _send_kept(self, under_way: SignInUnderWay, session_id: str | None) -> None:
        """Once the person signed in, send the messages kept for it, each a turn of its own; hold
        their answers (or what ended the sign-in) for delivery."""
        try:
            await under_way.done
        except SignInError as ended:
            self.outliving.hold(session_id, ended.said)
            return
        while under_way.kept:
            text, lang = under_way.kept.pop(0)
            try:
                answer = await self.client.answer(text, session_id, lang)
            except StillWorkingError:
                continue  # its task outlived this turn too: delivered as such
            except Exception as exc:  # the message is lost: say so in the log
                LOG.warning("the message kept while the person signed in to %s could not be sent: %s",
                            self.client.base_url, exc)
                continue
            self.outliving.hold(session_id, answer, self.client.waits_for_user(session_id))

    def _tell(self, step: str, under_way: SignInUnderWay, session_id: str | None) -> None:
        if self.listener is None:
            return
        try:
            self.listener(SignInEvent(step, under_way.prompt, session_id))
        except Exception as exc:  # a listener's failure is its own, never the turn's
            LOG.debug("a sign-in listener raised %r", exc)

    async def sign_out(self, session_id: str | None, sign_in: PersonToken | None) -> int:
        """Forget the tokens of the session's person (of every session when ``None``) and revoke
        them at the provider where it says how; stop their sign-ins under way. How many sign-ins
        were forgotten."""
        who = self.client.person(session_id)
        prefix = f"{who}\n" if session_id is not None else who
        for under_way in self.sign_ins.matching(prefix):
            under_way.done.cancel()
        gone = self.store.forget_people(prefix)
        if sign_in is not None:
            for signed in gone:
                if signed.refresh_token:
                    await sign_in.grant.revoke(self.client.sign_in_http, signed.refresh_token, "refresh_token")
                if signed.access_token:
                    await sign_in.grant.revoke(self.client.sign_in_http, signed.access_token, "access_token")
        return len(gone)

    def close(self) -> None:
        """Stop every sign-in under way, and the sending of what they kept."""
        self.sign_ins.close()


async def _signed_in(sign_in: PersonToken) -> bool:
    """Whether the current person has a token for ``sign_in`` (refreshed if need be)."""
    try:
        return await sign_in.authorization() is not None
    except SignInRequiredError:
        return False


def _ending(done: "asyncio.Future") -> str:
    """The step a sign-in's end is: "signed in", or why not."""
    if done.cancelled():
        return "stopped"
    error = done.exception()
    return "signed in" if error is None else getattr(error, "reason", "refused")
