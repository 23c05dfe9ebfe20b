"""Shared pytest fixtures. The scripted A2A agent server runs in a subprocess
(test/a2a_agent.py) and is started once per test session.

No test may write to the user's own state: at import, before any fixture or test runs,
``XDG_STATE_HOME`` is pointed at a private temporary directory for this process and,
through the environment, every process it starts (the plugin's default conversation
store and the bridge's default state dir both live under it). The user's real state
directory is kept in ``USER_STATE_HOME_VAR`` for test/test_state_isolation.py to check.
``HOME`` is left alone: the code's ``~/.local/state`` fallback applies only when
``XDG_STATE_HOME`` is unset, and build caches under ``~/.cache`` (the peer venvs of
test/interop.py) stay where they are, so they are not rebuilt every run.
"""

import atexit
import os
import shutil
import sys
import tempfile

from pathlib import Path

import pytest

#: the environment variable that keeps the user's own XDG state directory during the run
USER_STATE_HOME_VAR = "A2A_SOLVER_TESTS_USER_STATE_HOME"
#: the environment variable that names the run's private state directory
PRIVATE_STATE_HOME_VAR = "A2A_SOLVER_TESTS_PRIVATE_STATE_HOME"


def _isolate_user_state() -> None:
    """Point XDG_STATE_HOME at a private temporary directory, once (this module may be
    imported again under another name, and an outer test run may have done it already)."""
    private = os.environ.get(PRIVATE_STATE_HOME_VAR)
    if private and os.environ.get("XDG_STATE_HOME") == private and USER_STATE_HOME_VAR in os.environ:
        return
    os.environ[USER_STATE_HOME_VAR] = (os.environ.get("XDG_STATE_HOME")
                                       or os.path.join(os.path.expanduser("~"), ".local", "state"))
    private = tempfile.mkdtemp(prefix="ovos_a2a_tests_state_")
    os.environ[PRIVATE_STATE_HOME_VAR] = os.environ["XDG_STATE_HOME"] = private
    for name in ("OVOS_A2A_STATE_DIR", "OVOS_A2A_DB"):  # a bridge's own settings would point elsewhere
        os.environ.pop(name, None)
    atexit.register(shutil.rmtree, private, ignore_errors=True)


_isolate_user_state()


@pytest.fixture(scope='session', autouse=True)
def private_state_home():
    """The run's private XDG_STATE_HOME (set at import, so that session fixtures started
    before any test inherit it too); checked to be in force for the whole session."""
    private = Path(os.environ[PRIVATE_STATE_HOME_VAR])
    assert os.environ.get("XDG_STATE_HOME") == str(private), "XDG_STATE_HOME is not the run's private directory"
    yield private
    assert os.environ.get("XDG_STATE_HOME") == str(private), "a test left XDG_STATE_HOME changed"


sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_process import AgentProcess  # noqa: E402


@pytest.fixture(scope='session')
def agent():
    """One test agent server for the whole session."""
    with AgentProcess() as process:
        yield process


@pytest.fixture(scope='session')
def agent_pair():
    """(A, B): B is a plain server; A's `foreign` / `redirect` agents point at B's echo."""
    with AgentProcess() as b, AgentProcess('--foreign-url', f'{b.url}/echo/') as a:
        yield a, b


from bridge_process import BridgeProcess  # noqa: E402


@pytest.fixture(scope='session')
def bridge():
    """One bridge (echo backend, 1 s heartbeat) for the whole session, on a fresh state dir."""
    with BridgeProcess('--heartbeat', '1') as process:
        yield process
