# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The backend of a real persona: an ovos-persona ``Persona`` built from a persona JSON file
(by default the embedded offline persona), whose session is the A2A contextId."""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from ovos_a2a_solver.bridge.backends.protocols import (Capability, FollowsProgress, NoAnswerError, Question,
                                                       RelayingHandler, StoppableRelay)
from ovos_a2a_solver.bridge.backends.persona_file import DEFAULT_PERSONA_FILE, read_persona_file

#: the plugin id of the embedded RiveScript engine (named, not imported: the bridge imports no engine)
RIVESCRIPT_PLUGIN_ID = "ovos-a2a-rivescript"


class PersonaBackend:
    """An ovos-persona ``Persona``; the A2A contextId is its session."""

    def __init__(self, config: dict) -> None:
        from ovos_persona import Persona

        self.config = config
        self.name = config.get("name") or "OVOS persona"
        self.description = config.get("description") or f"The OVOS persona {self.name}."
        self._skills = declared_skills(config.get("skills"), self.name)
        self.persona = Persona(self.name, with_own_memory(config, self.name))
        self._handlers = list(config.get("handlers") or config.get("solvers") or [])

    @classmethod
    def from_file(cls, path: str | os.PathLike | None) -> "PersonaBackend":
        """Load a persona JSON file (the embedded default persona when ``path`` is None)."""
        config = read_persona_file(path)
        config.setdefault("name", Path(path or DEFAULT_PERSONA_FILE).stem)
        return cls(config)

    def capabilities(self) -> list[Capability]:
        """The skills the persona file declares, else one per handler."""
        return self._skills or [Capability(id=h, name=h, description=f"Answers through the OVOS plugin {h}.")
                                for h in self._handlers]

    def reply(self, text: str, session_id: str, lang: str | None = None) -> Iterator[str | Question]:
        from ovos_bus_client.session import Session

        session = Session(session_id)
        if lang:
            session.lang = lang
        messages = self.persona.get_messages(text, session)
        said = []
        for sentence in self.persona.stream(messages, session):
            if sentence and sentence.strip():
                said.append(sentence.strip())
                yield sentence.strip()
        if not said:
            error = getattr(self.persona.solvers, "last_error", None)
            raise NoAnswerError(f"the persona had no answer ({error})" if error else "the persona had no answer")
        self.persona.remember(text, " ".join(said), session)
        if self._relay_waits_for_user(session_id):
            yield Question()

    def interrupt(self, session_id: str) -> None:
        """End ``session_id``'s turn where it is: every relaying handler that can stop its
        remote work mid-turn does (a persona step has no other way out than its next sentence)."""
        for handler in self.persona.solvers.loaded_modules.values():
            if isinstance(handler, StoppableRelay):
                handler.stop(session_id)

    def follow_progress(self, session_id: str, listener: Callable[[str], None] | None) -> None:
        """Hand ``listener`` the progress notes of every relaying handler that hears its remote
        agent's (``None``: no longer); a persona without one has none to give."""
        for handler in self.persona.solvers.loaded_modules.values():
            if isinstance(handler, FollowsProgress):
                handler.follow_progress(session_id, listener)

    def _relay_waits_for_user(self, session_id: str) -> bool:
        """Whether a relaying handler left its remote task waiting for the user: then this
        task waits too, and the next message continues it."""
        return any(isinstance(handler, RelayingHandler) and handler.has_open_task(session_id)
                   for handler in self.persona.solvers.loaded_modules.values())


def with_own_memory(config: dict, name: str) -> dict:
    """``config`` with the persona's ``name`` given to its embedded RiveScript engine (unless
    the file names a persona there itself), whose memory is then this persona's alone: two
    personas of one process share its session file, and a caller's contextId may reach both."""
    handlers = config.get("handlers") or config.get("solvers") or []
    if RIVESCRIPT_PLUGIN_ID not in handlers:
        return config
    block = config.get(RIVESCRIPT_PLUGIN_ID)
    block = dict(block) if isinstance(block, dict) and block else {"enabled": True}  # as ovos-persona's default
    block.setdefault("persona", name)
    return {**config, RIVESCRIPT_PLUGIN_ID: block}


def declared_skills(skills: object, persona: str) -> list[Capability]:
    """A persona file's ``skills``: a list of ``{"name", "description", "examples": [...],
    "tags": [...], "id"}`` (``name`` required; ``id`` defaults to the name as a path). A
    ``ValueError`` names the first entry that is not so."""
    if skills is None:
        return []
    where = f"persona {persona!r}: skills"
    if not isinstance(skills, list):
        raise ValueError(f"{where} must be a list of objects with a name, a description and examples")
    out = []
    for n, skill in enumerate(skills):
        if not isinstance(skill, dict) or not isinstance(skill.get("name"), str) or not skill["name"].strip():
            raise ValueError(f"{where}[{n}] must be an object with a name")
        lists = {key: skill.get(key, []) for key in ("examples", "tags")}
        for key, value in lists.items():
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"{where}[{n}].{key} must be a list of strings")
        description = skill.get("description", skill["name"])
        if not isinstance(description, str):
            raise ValueError(f"{where}[{n}].description must be a string")
        skill_id = skill.get("id") or "-".join(re.findall(r"[a-z0-9]+", skill["name"].lower())) or f"skill-{n}"
        out.append(Capability(id=str(skill_id), name=skill["name"].strip(), description=description.strip(),
                              examples=tuple(lists["examples"]), tags=tuple(lists["tags"]), declared=True))
    return out
