# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Signing in from the command line, for an agent that acts for a person (see ``agent.sign_in``):
``send`` and ``chat`` print where to go and the code as soon as the agent needs it (on stderr,
the answer alone on stdout), wait for the person to sign in on another device (as long as the
code lives, not only ``--timeout``), and go on; ``--json`` reports each step. ``sign-out``
forgets (and revokes) what a session signed in for."""
from __future__ import annotations

import sys
import threading

from ovos_a2a_solver.cli.output import CommandError, Output


class SignInSteps:
    """The ``on_sign_in`` of a command: each step told on stderr as it happens (the address, the
    code, the end), and kept for ``--json``. The sentences the answer says them in are not
    printed again with the answer (:meth:`shown`)."""

    def __init__(self, out: Output) -> None:
        self.out = out
        self.steps: list[dict] = []
        self._prompts: set[str] = set()
        self._after_prompt = False
        self._lock = threading.Lock()

    def __call__(self, event) -> None:
        prompt = event.prompt
        with self._lock:
            self.steps.append({"step": event.step, "agent": prompt.agent, "verification_uri": prompt.verification_uri,
                               "verification_uri_complete": prompt.verification_uri_complete,
                               "user_code": prompt.user_code, "expires_in": prompt.expires_in})
            self._prompts |= {prompt.spoken(), prompt.reminder()}
        if event.step == "started":  # on stderr with --json too: the person needs the code while the command waits
            self._note(f"to let {prompt.agent} act for you, sign in: go to {prompt.verification_uri} and enter the "
                       f"code {prompt.user_code}" + (f" (or open {prompt.verification_uri_complete})"
                                                     if prompt.verification_uri_complete else "")
                       + f"; waiting up to {prompt.expires_in:g} s")
        elif event.step == "waiting":
            self._note(f"still waiting for you to sign in: {prompt.verification_uri}, code {prompt.user_code}")
        else:
            self._note(f"sign-in to {prompt.agent}: {event.step}")

    @staticmethod
    def _note(text: str) -> None:
        if sys.stderr.isatty():
            sys.stderr.write("\r\033[K")  # the wait line, if any, goes first
        Output().note(text)

    def shown(self, piece: str) -> str:
        """``piece`` of the answer as it is printed: "" for a sign-in's sentence (told already), and
        the piece after one without the line break that set it apart."""
        with self._lock:
            if piece.strip() in self._prompts:
                self._after_prompt = True
                return ""
            after, self._after_prompt = self._after_prompt, False
        return piece.lstrip("\n") if after else piece

    def report(self) -> list[dict]:
        """The steps, for ``--json``."""
        with self._lock:
            return list(self.steps)


def answer_after_sign_in(client, session: str, pending, steps: SignInSteps) -> str:
    """The answer of the message kept while the person signs in (``SignInPendingError``): waited
    for as long as the code lives, and the agent's turn after it. A sign-in that ended without
    tokens is an error of the command."""
    answer = client.answer_when_ready(session, within=pending.prompt.expires_in + client.timeout)
    ended = next((s["step"] for s in reversed(steps.report()) if s["step"] not in ("started", "waiting")), "")
    if ended and ended != "signed in":
        raise CommandError(answer or f"the sign-in to {pending.prompt.agent} {ended}", 1)
    if answer is None:
        raise CommandError(f"no answer from {client.base_url} after the sign-in", 1)
    return answer


def cmd_sign_out(args, out: Output) -> int:
    """Forget what a session signed in for with the agent (every session's with ``--all``)."""
    from ovos_a2a_solver.cli.agents import open_client

    with open_client(args, out) as client:
        forgotten = client.sign_out(None if args.all else args.session)
    whose = "every session" if args.all else f"session {args.session}"
    if out.as_json:
        out.json({"signed_out": forgotten, "session": None if args.all else args.session})
    elif forgotten:
        print(f"signed out of {client.base_url} for {whose} ({forgotten} sign-in{'s' if forgotten != 1 else ''} "
              f"forgotten)")
    else:
        print(f"{whose} was not signed in to {client.base_url}")
    return 0
