# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""A persona file: the JSON object a persona is built from (the embedded offline persona's
when none is named), read here for all who ask of it: the backend that builds the persona
(:mod:`.persona`), the settings (the persona's name names the bridge's own state directory,
and a persona's path under ``--personas-dir``), and the start (whether it relays to an
agent). It imports nothing of the bridge, so the settings may import it.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

#: the persona a bridge serves when no file is given: the embedded offline persona
DEFAULT_PERSONA_FILE = Path(__file__).resolve().parent.parent.parent / "personas" / "default.json"


def read_persona_file(path: str | os.PathLike | None) -> dict:
    """The persona file's JSON object (the embedded persona's when ``path`` is None);
    ``ValueError`` saying why when it cannot be read or holds no object."""
    path = Path(path) if path else DEFAULT_PERSONA_FILE
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read persona file {path}: {exc}") from exc
    if not isinstance(config, dict):
        raise ValueError(f"persona file {path} is not a JSON object")
    return config


def persona_file_name(path: str | os.PathLike | None) -> str:
    """The ``name`` a persona file gives its persona (the file's name without ``.json`` when it
    gives none, or cannot be read: loading the persona says why)."""
    try:
        name = read_persona_file(path).get("name")
    except ValueError:
        name = None
    return name if isinstance(name, str) and name.strip() else Path(path or DEFAULT_PERSONA_FILE).stem
