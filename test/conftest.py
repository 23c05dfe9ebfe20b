"""Shared pytest fixtures. The scripted A2A agent server runs in a subprocess
(test/a2a_agent.py) and is started once per test session."""

import sys

from pathlib import Path

import pytest

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
