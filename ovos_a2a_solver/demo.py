# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""``ovos-a2a demo``: the whole loop on one machine, nothing to configure.

1. The bridge starts on a free loopback port with the embedded offline persona
   (RiveScript), its task store and conversation memory in a temporary directory.
2. A second OVOS persona, whose only handler is this plugin, points at the bridge.
3. A short conversation goes through: persona -> plugin -> A2A -> bridge -> persona.
   The follow-up question needs what was said two turns before ("Your name is Ada."),
   and the remote contextId stays the same: the remote conversation is kept.
4. A second session (a new remote conversation) asks the same question and is not
   told the name: each conversation has a memory of its own.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TURNS = ("hello", "my name is Ada", "what is my name?")
SECOND_TURN = "what is my name?"  # in a second, fresh conversation
# what the embedded persona's brain answers, word for word
REMEMBERED = "Your name is Ada."
NOT_KNOWN = "I do not know your name yet. Tell me by saying: my name is, then your name."
READY = re.compile(r'serving "(?P<name>[^"]+)" at (?P<url>\S+)')


class DemoError(RuntimeError):
    """The demo could not finish; the message says where it stopped."""


def start_bridge(state_dir: str, timeout: float = 60) -> tuple[subprocess.Popen, str, str]:
    """The bridge in a child process; returns (process, A2A URL, persona name).

    Everything it keeps is in ``state_dir``: its task store, the persona's conversation
    memory (``XDG_STATE_HOME`` of the child) and its output (files: a pipe nobody reads
    could fill and stall it).
    """
    Path(state_dir).mkdir(parents=True, exist_ok=True)
    stdout, stderr = Path(state_dir) / "bridge.out", Path(state_dir) / "bridge.err"
    env = {**os.environ, "XDG_STATE_HOME": str(Path(state_dir) / "xdg")}
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "ovos_a2a_solver.bridge", "--port", "0",
                                 "--state-dir", state_dir], stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                env=env)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        match = READY.search(stdout.read_text(errors="replace"))
        if match:
            return proc, match["url"], match["name"]
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    lines = stderr.read_text(errors="replace").strip().splitlines()
    raise DemoError("the bridge did not start" + (f": {lines[-1]}" if lines else f" within {timeout:g} s"))


def run_demo(out, timeout: float = 60, quiet: bool = True) -> int:
    from ovos_utils.log import LOG

    if quiet:  # OVOS logs to stdout: keep the conversation readable
        LOG.set_level("ERROR")
    from ovos_bus_client.session import Session
    from ovos_persona import Persona
    from ovos_plugin_manager.templates.agents import AgentMessage, MessageRole

    with tempfile.TemporaryDirectory(prefix="ovos-a2a-demo-") as tmp:
        print(out.dim("starting the bridge with the embedded offline persona…"))
        proc, url, remote_name = start_bridge(str(Path(tmp) / "bridge"))
        try:
            print(f"bridge: {out.bold(remote_name)} is an A2A agent at {url}")
            config = {"name": "remote OVOS", "handlers": ["ovos-a2a-solver"],
                      "ovos-a2a-solver": {"agent_url": url, "timeout": timeout, "streaming": True,
                                          "state_file": str(Path(tmp) / "conversations.json")}}
            persona = Persona(config["name"], config)
            engine = persona.solvers.loaded_modules["ovos-a2a-solver"]
            print(f"persona: {out.bold(config['name'])} answers through the ovos-a2a-solver plugin")

            def say(text: str, session_id: str) -> tuple[str, str]:
                print(f"{out.bold('you')}: {text}")
                answer = persona.chat([AgentMessage(role=MessageRole.USER, content=text)], Session(session_id))
                if not answer:
                    raise DemoError(f"no answer to {text!r}: {getattr(persona.solvers, 'last_error', None)}")
                context = engine.client.conversation(session_id).context_id
                print(f"{out.bold(remote_name)}: {answer}  {out.dim('(contextId …' + context[-8:] + ')')}")
                return answer, context

            print(out.dim("\nconversation 1"))
            said = [say(text, "demo") for text in TURNS]
            contexts = {context for _, context in said}
            if len(contexts) != 1:
                raise DemoError(f"the remote conversation changed between turns: {sorted(contexts)}")
            if said[-1][0] != REMEMBERED:
                raise DemoError(f"the persona did not remember the name: {said[-1][0]!r}")
            print(out.dim("\nconversation 2: another session, so a new remote conversation"))
            answer, context = say(SECOND_TURN, "demo-2")
            if context in contexts:
                raise DemoError("the second session reached the first remote conversation")
            if answer != NOT_KNOWN:
                raise DemoError(f"the second conversation was not a fresh one: {answer!r}")
            print(f"\n{out.bold('ok')}: {len(TURNS)} turns in one remote conversation remembered the name; "
                  f"a second conversation did not know it.")
            engine.shutdown()
            return 0
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
