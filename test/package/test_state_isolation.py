"""No test writes to the user's own state directory.

conftest.py points ``XDG_STATE_HOME`` at a private temporary directory before anything
runs, and remembers the user's own one. Here the plugin's default conversation store (in
this process) and a bridge with its default state dir (a child process) are used with a
unique marker; the marker must turn up in the private directory and nowhere under the
user's. (A marker, not file times: the user's own OVOS, or another checkout's test run,
may write there meanwhile, and that is not ours to judge.)
"""
import os
import uuid
from pathlib import Path

from ovos_plugin_manager.templates.agents import AgentMessage, MessageRole

from ovos_a2a_solver import A2AChatEngine
from ovos_a2a_solver.bridge.config import default_state_dir
from ovos_a2a_solver.conversations.conversation_store import default_state_path

from support.bridge_process import BridgeProcess
from support.bridge_rpc import answer, message, send, task_of
from support.state_home import PRIVATE_STATE_HOME_VAR, USER_STATE_HOME_VAR

USER_STATE = Path(os.environ[USER_STATE_HOME_VAR]) / "ovos_a2a_solver"
PRIVATE_STATE = Path(os.environ[PRIVATE_STATE_HOME_VAR]) / "ovos_a2a_solver"


def files_mentioning(root: Path, marker: str) -> list[str]:
    """The files under ``root`` (if it exists) whose bytes contain ``marker``; paths relative to ``root``."""
    if not root.is_dir():
        return []
    return sorted(str(path.relative_to(root)) for path in root.rglob("*")
                  if path.is_file() and marker.encode() in path.read_bytes())


def test_the_default_state_locations_are_private_to_the_test_run():
    assert PRIVATE_STATE.parent.resolve() != Path(os.environ[USER_STATE_HOME_VAR]).resolve()
    assert default_state_path() == PRIVATE_STATE / "conversations.json"
    assert default_state_dir() == PRIVATE_STATE / "bridge"


def test_the_default_conversation_store_and_bridge_state_never_reach_the_users_state(agent):
    marker = f"isolation-{uuid.uuid4().hex}"
    engine = A2AChatEngine({"agent_url": agent.agent("echo")})  # no state_file: the default store
    reply = engine.continue_chat([AgentMessage(role=MessageRole.USER, content="hello")], session_id=marker)
    assert reply.content.endswith("]: hello")
    with BridgeProcess(default_state_dir=True) as bridge:  # no --state-dir: the default one
        assert answer(task_of(send(bridge.url, message(marker)))) == f"echo: {marker}"
    assert bridge.state_dir is None

    written = files_mentioning(PRIVATE_STATE, marker)
    assert "conversations.json" in written, written  # the store's session key
    assert any(name.startswith("bridge/echo-0/bridge.sqlite3") for name in written), written  # the bridge's own store
    assert files_mentioning(USER_STATE, marker) == []
