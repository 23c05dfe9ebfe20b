"""Shared pytest fixtures. The scripted A2A agent server runs in a subprocess
(test/support/a2a_agent.py) and is started once per test session.

No test may write to the user's own state: at import, before any fixture or test runs,
``XDG_STATE_HOME`` is pointed at a private temporary directory (support/state_home.py), and
the trust store at an empty one (support/trust_store.py).

Run with pytest-xdist (``-n``), each worker has that directory, its session servers, and
(with ``OVOS_A2A_TEST_POSTGRES``) a PostgreSQL database of its own (support/postgres.py). A
test marked ``alone`` measures time: it runs while no other worker runs a test
(support/alone.py). The modules go to the workers longest first (support/module_order.py).
"""

import os

from pathlib import Path

import pytest

from support.agent_process import AgentProcess
from support.alone import one_at_a_time
from support.authorization_server import AuthorizationServer
from support.bridge_in_process import InProcessBridge
from support.module_order import longest_first, recorded_seconds
from support.postgres import POSTGRES_VAR, create_database, drop_database
from support.state_home import PRIVATE_STATE_HOME_VAR, RUN_STATE_HOME_VAR, isolate_user_state
from support.trust_store import trust_no_authority

isolate_user_state()
trust_no_authority(os.environ[RUN_STATE_HOME_VAR])

_SHARED_POSTGRES = "A2A_SOLVER_TESTS_SHARED_POSTGRES"  # the database given to the run, under a worker's own


def pytest_configure(config):
    """The ``alone`` mark. A pytest-xdist worker points OVOS_A2A_TEST_POSTGRES at a new
    database of its own (before the test modules, which read it at import, are collected)."""
    config.addinivalue_line("markers", "alone: the test measures time, so it runs while no other test runs")
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    given = os.environ.get(POSTGRES_VAR)
    if worker and given and _SHARED_POSTGRES not in os.environ:
        from sqlalchemy.engine import make_url

        prefix = f"{make_url(given).database}_{worker}"
        os.environ[POSTGRES_VAR] = create_database(given, prefix)
        os.environ[_SHARED_POSTGRES] = given


def pytest_collection_modifyitems(items):
    """The modules longest first, so that the workers end together (support/module_order.py)."""
    items[:] = longest_first(items, recorded_seconds())


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """Each test, its fixtures' set-up and tear-down included, under the run's lock (see
    support/alone.py): shared, or whole for a test marked ``alone``. Outermost, so that the
    wait for the lock is not counted in the test's timeout."""
    with one_at_a_time(alone=item.get_closest_marker("alone") is not None):
        yield


def pytest_unconfigure(config):
    given = os.environ.pop(_SHARED_POSTGRES, None)
    if given:
        drop_database(os.environ[POSTGRES_VAR], given)
        os.environ[POSTGRES_VAR] = given


@pytest.fixture(scope='session', autouse=True)
def private_state_home():
    """The run's private XDG_STATE_HOME (set at import, so that session fixtures started
    before any test inherit it too); checked to be in force for the whole session."""
    private = Path(os.environ[PRIVATE_STATE_HOME_VAR])
    assert os.environ.get("XDG_STATE_HOME") == str(private), "XDG_STATE_HOME is not the run's private directory"
    yield private
    assert os.environ.get("XDG_STATE_HOME") == str(private), "a test left XDG_STATE_HOME changed"


@pytest.fixture
def private_state(tmp_path, monkeypatch):
    """This test's own XDG state directory (``XDG_STATE_HOME`` points at it; it is not made
    here): what an engine or a bridge of one test keeps is out of every other test's way."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg"


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


@pytest.fixture(scope='session')
def authorization_server():
    """One OAuth 2.0 / OpenID Connect authorization server (oidc-provider) for the whole session."""
    with AuthorizationServer() as server:
        yield server


@pytest.fixture(scope='session')
def sign_in_agent(authorization_server):
    """The test agents with the sign-in agents (signin, signin-oidc, signin-later) of ``authorization_server``."""
    with AgentProcess('--issuer', authorization_server.url) as process:
        yield process


@pytest.fixture(scope='module')
def messagebus(tmp_path_factory):
    """A real OVOS messagebus (ovos-messagebus) on a free loopback port, and a listener on it."""
    import json
    import os
    import socket
    import subprocess
    import sys

    from ovos_bus_client import MessageBusClient

    from support.network import free_port
    from support.waiting import wait_until

    home = tmp_path_factory.mktemp("bus")
    port = free_port()
    (home / "config" / "mycroft").mkdir(parents=True)
    (home / "config" / "mycroft" / "mycroft.conf").write_text(json.dumps(
        {"websocket": {"host": "127.0.0.1", "port": port, "route": "/core", "ssl": False}}))
    env = {**os.environ, "XDG_CONFIG_HOME": str(home / "config"), "XDG_DATA_HOME": str(home / "data"),
           "XDG_STATE_HOME": str(home / "state"), "XDG_CACHE_HOME": str(home / "cache")}
    server = subprocess.Popen([sys.executable, "-m", "ovos_messagebus"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)

    def listening() -> bool:
        assert server.poll() is None, "the messagebus exited before it listened"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return False
        return True

    listener = MessageBusClient(host="127.0.0.1", port=port, route="/core")
    try:
        # a client that finds nothing listening yet tries again only seconds later (ovos-bus-client's backoff)
        wait_until(listening, "the messagebus to listen")
        listener.run_in_thread()
        assert listener.connected_event.wait(30), "the messagebus did not accept a connection"
        spoken = []
        listener.on("speak", lambda m: spoken.append((m.data, m.context)))
        yield {"host": "127.0.0.1", "port": port, "route": "/core"}, spoken
    finally:
        listener.close()
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture(scope='session')
def echo_bridge():
    """One bridge (echo backend, 1 s heartbeat) for the whole session, on a fresh state dir, in
    this process."""
    with InProcessBridge('--heartbeat', '1') as bridge:
        yield bridge
