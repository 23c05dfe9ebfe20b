#!/usr/bin/env python3
"""Ask an OVOS persona backed by a remote A2A agent a few questions, in one session.

    python examples/ask_persona.py AGENT_URL "first question" ["follow-up" ...]

The persona is persona_examples/remote-agent.json with its agent_url replaced.
"""
import json
import sys
import tempfile
from pathlib import Path

from ovos_bus_client.session import Session
from ovos_persona import Persona
from ovos_plugin_manager.templates.agents import AgentMessage, MessageRole


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    config = json.loads((Path(__file__).resolve().parent.parent / "persona_examples" / "remote-agent.json").read_text())
    config["ovos-a2a-solver"]["agent_url"] = sys.argv[1]
    # keep this try-out's conversations apart from the device's real ones
    config["ovos-a2a-solver"]["state_file"] = str(Path(tempfile.gettempdir()) / "ovos-a2a-example.json")
    persona = Persona(config["name"], config)
    session = Session("example")
    for utterance in sys.argv[2:]:
        answer = persona.chat([AgentMessage(role=MessageRole.USER, content=utterance)], session)
        print(f"USER: {utterance}\n{config['name']}: {answer or '(no answer: the persona would speak its error dialog)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
