# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""``serve``: start a bridge, as one process or as ``--workers`` under a supervisor.

It checks what can be checked before the persona loads (:mod:`.startup`), binds the port,
then serves in this process (:mod:`.server`) or forks the workers (:mod:`.workers`), as
uvicorn's ``main.run`` picks one server or its supervisor: neither of those imports the other.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Callable

from ovos_a2a_solver.bridge.config import BridgeSettings, names_of
from ovos_a2a_solver.bridge.process.startup import (SERVER_EXTRA, StartError, check_database, check_file_limit,
                                                    check_relay_target, claim_store, grpc_port, listen, load_backend,
                                                    sdk_tracing_off_by_default, with_own_store)

LOG = logging.getLogger("ovos_a2a_solver.bridge")


def serve(settings: BridgeSettings, ready: Callable | None = None, verbose: bool = False) -> None:
    """Serve until SIGINT/SIGTERM. ``ready(settings, name, workers)`` is called once the
    port accepts (with ``--workers``: once every worker does), with the ports really bound,
    the agent's name and the workers' process ids (none when alone). Raises :class:`StartError` or
    :class:`~ovos_a2a_solver.bridge.config.SettingsError` if it cannot start; ``verbose``
    lets uvicorn's own report of a failed start through (a traceback)."""
    sdk_tracing_off_by_default()
    try:
        import uvicorn  # noqa: F401

        from ovos_a2a_solver.bridge.edge.card import read_card_signing_key
        from ovos_a2a_solver.bridge.app import Bridge
    except ModuleNotFoundError as exc:
        raise StartError(f"the bridge needs the server extra (missing: {exc.name}): {SERVER_EXTRA}", 2) from None

    settings.check_exposure()
    signing_key = read_card_signing_key(settings)
    settings = with_own_store(settings)
    store_lock = None  # this bridge's hold on its SQLite store, until it stops
    try:
        sock = listen(settings.host, settings.port, names_of("port"))
        try:
            settings = dataclasses.replace(settings, port=sock.getsockname()[1], grpc_port=grpc_port(settings))
            check_relay_target(settings)
            check_database(settings.database_url)
            store_lock = claim_store(settings)
            check_file_limit(settings)
            LOG.debug("settings: %r; tasks kept in %s", settings, settings.store)
            if settings.workers > 1:
                from ovos_a2a_solver.bridge.process.workers import supervise

                supervise(settings, sock, signing_key, ready, verbose)
                return
            from ovos_a2a_solver.bridge.process.server import run_bridge

            bridge = Bridge(settings, load_backend(settings), signing_key)
        except BaseException:
            sock.close()
            raise
        run_bridge(bridge, sock, ready, verbose)
    finally:
        if store_lock is not None:
            store_lock.release()
