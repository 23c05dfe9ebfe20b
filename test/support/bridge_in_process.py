"""A bridge served in the test's own process, for tests of what it answers, not of its process.

    with InProcessBridge("--heartbeat", "1") as bridge:
        bridge.url        # 'http://127.0.0.1:PORT/a2a'   (the A2A JSON-RPC endpoint)
        bridge.root       # 'http://127.0.0.1:PORT'
        bridge.calls()    # backend calls so far (only with call_log=...)

The arguments are those of ``python -m ovos_a2a_solver.bridge`` (see
:class:`~support.bridge_process.BridgeProcess`, whose ``state_dir``, ``default_state_dir``,
``env``, ``backend`` and ``call_log`` it takes too): they are read by the command's own parser
and settings, and what the command would serve (a ``Bridge``, or with ``--personas-dir`` one for
each persona, ``url`` then the first one's), behind the connection guard and uvicorn's options of
a real start, is served on a loopback port by uvicorn in a thread (:func:`support.network.serving`),
lifespan included. Callers reach it over HTTP (and gRPC) as they reach a bridge process; what is not there
is the process: no start-up of an interpreter (about a second of CPU each), no signals, no exit
status, no log of its own (its log goes to the test's), no start-up checks of the store's lock
or the relay target. A test of those starts a :class:`~support.bridge_process.BridgeProcess`.
``env`` is read by the settings only, so it may hold ``OVOS_A2A_*`` settings only (anything else
is refused: a process would have had it in its environment); the test's environment is not changed.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
from typing import Mapping, Optional

from support.bridge_process import READY_TIMEOUT, BridgeUnderTest, db_in_environment
from support.network import serving


class InProcessBridge(BridgeUnderTest):
    """One bridge served in this process; a context manager. ``stop()`` is idempotent."""

    def __init__(self, *args: str, state_dir: Optional[os.PathLike | str] = None,
                 env: Optional[Mapping[str, str]] = None, backend: str = "echo",
                 call_log: Optional[os.PathLike | str] = None, default_state_dir: bool = False) -> None:
        from ovos_a2a_solver.bridge.config import BridgeSettings, names_of
        from ovos_a2a_solver.bridge.edge.card import read_card_signing_key
        from ovos_a2a_solver.bridge.process.command import add_arguments
        from ovos_a2a_solver.bridge.process.one_process import connection_guard, server_options
        from ovos_a2a_solver.bridge.process.serve import bridge_of, personas_of
        from ovos_a2a_solver.bridge.process.startup import grpc_port, listen, with_own_store

        unread = sorted(name for name in env or {} if not name.startswith("OVOS_A2A_"))
        if unread:  # the process's environment it would have been: this bridge has none of its own
            raise ValueError(f"a bridge in this process reads OVOS_A2A_* settings only, not {', '.join(unread)}")
        super().__init__(state_dir, default_state_dir, call_log)
        db_env, args = db_in_environment(args)
        environment = {**os.environ, **(env or {}), **db_env}
        if self.call_log is not None:
            environment["OVOS_A2A_ECHO_LOG"] = str(self.call_log)
        parser = argparse.ArgumentParser()
        add_arguments(parser)
        state_args = [] if self.state_dir is None else ["--state-dir", str(self.state_dir)]
        flags = parser.parse_args(["--port", "0", "--backend", backend, *state_args, *args])
        settings = BridgeSettings.load(vars(flags), env=environment)
        settings.check_exposure()
        files = settings.persona_files() if settings.personas_dir else []
        if not files:
            settings = with_own_store(settings)
        listener = listen(settings.host, settings.port, names_of("port"))
        self._serving = contextlib.ExitStack()
        try:
            settings = dataclasses.replace(settings, port=listener.getsockname()[1], grpc_port=grpc_port(settings))
            bridge = bridge_of(settings, personas_of(settings, files, 0), read_card_signing_key(settings))
            guard = connection_guard(settings)
            port = self._serving.enter_context(serving(
                guard.app(bridge.app), listener=listener, start_within=READY_TIMEOUT,
                stop_within=2 * settings.shutdown_grace + 15, **server_options(settings, guard)))
        except BaseException:
            listener.close()
            self.stop()
            raise
        self.settings = settings
        self.grpc_port: Optional[int] = settings.grpc_port
        # the first persona served, as the first line of a bridge process's banner names it
        name, first = bridge.served[0]
        self._serving_at(name, first.public_url, first.card_url, port)

    def stop(self) -> None:
        """Stop serving (gracefully, as uvicorn stops: the app's shutdown runs) and wait for it."""
        try:
            self._serving.close()
        finally:
            self._forget_state()
