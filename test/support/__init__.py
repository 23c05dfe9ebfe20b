# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""What the tests share: the scripted A2A agents and their processes (``a2a_agent``,
``agent_process``, ``peers/``, ``legacy/``), the bridge process (``bridge_process``), its
replicas on PostgreSQL (``replicas``) and its relay persona (``personas``), calls to a bridge
(``bridge_rpc``, ``malformed``), the plugin's chat engine as a persona uses it (``chat``), the
command line (``cli_run``), waiting (``waiting``), free ports (``network``), the interop venvs
(``interop``), the failure plugin's lines (``no_brain``) and the run's private state directory
(``state_home``), the order modules go to the workers in (``module_order``); and the scripts of
``tools/`` (:func:`load_tool`).

pytest puts ``test/`` on ``sys.path`` (``pythonpath`` in pyproject.toml), so tests import
``from support.bridge_process import BridgeProcess``.
"""
import importlib.util
from pathlib import Path
from types import ModuleType

#: the checkout's root (README.md, persona_examples/, tools/, ovos_a2a_solver/)
REPO_ROOT = Path(__file__).resolve().parents[2]


def load_tool(name: str) -> ModuleType:
    """The script ``tools/NAME.py`` as a module (``import_graph``, ``settings_tables``, ``module_seconds``)."""
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
