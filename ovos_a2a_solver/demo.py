# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""``ovos-a2a demo``: the whole loop on one machine, nothing to configure.

1. The bridge starts on a free loopback port with the embedded offline persona
   (RiveScript), its task store in a temporary directory.
2. A second OVOS persona, whose only handler is this plugin, points at the bridge.
3. A short conversation goes through: persona -> plugin -> A2A -> bridge -> persona.
   The follow-up question needs what was said two turns before, and the remote
   contextId stays the same: the remote conversation is kept.
"""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TURNS = ("hello", "my name is Ada", "what is my name?")
READY = re.compile(r'serving "(?P<name>[^"]+)" at (?P<url>\S+)')


class DemoError(RuntimeError):
    """The demo could not finish; the message says where it stopped."""


def start_bridge(state_dir: str, timeout: float = 60) -> tuple[subprocess.Popen, str, str]:
    """The bridge in a child process; returns (process, A2A URL, persona name).

    Its output goes to files in ``state_dir`` (a pipe nobody reads could fill and stall it).
    """
    Path(state_dir).mkdir(parents=True, exist_ok=True)
    stdout, stderr = Path(state_dir) / "bridge.out", Path(state_dir) / "bridge.err"
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "ovos_a2a_solver.bridge", "--port", "0",
                                 "--state-dir", state_dir], stdout=out, stderr=err, stdin=subprocess.DEVNULL)
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
            print(f"persona: {out.bold(config['name'])} answers through the ovos-a2a-solver plugin\n")
            session = Session("demo")
            contexts = []
            for text in TURNS:
                print(f"{out.bold('you')}: {text}")
                answer = persona.chat([AgentMessage(role=MessageRole.USER, content=text)], session)
                if not answer:
                    raise DemoError(f"no answer to {text!r}: {getattr(persona.solvers, 'last_error', None)}")
                contexts.append(engine.client.conversation("demo").context_id)
                print(f"{out.bold(remote_name)}: {answer}  {out.dim('(contextId ' + contexts[-1][:8] + '…)')}")
            if len(set(contexts)) != 1:
                raise DemoError(f"the remote conversation changed between turns: {contexts}")
            print(f"\n{out.bold('ok')}: {len(TURNS)} turns, one remote conversation ({contexts[0]}); "
                  f"the follow-up was answered from what was said before.")
            engine.shutdown()
            return 0
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
