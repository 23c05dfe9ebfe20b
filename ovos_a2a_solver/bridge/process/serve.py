# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""``serve``: start a bridge, as one process or as ``--workers`` under a supervisor.

It checks what can be checked before the persona loads (:mod:`.startup`), binds the port,
then serves in this process (:mod:`.one_process`) or forks the workers (:mod:`.workers`), as
uvicorn's ``main.run`` picks one server or its supervisor: neither of those imports the other.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Callable

from ovos_a2a_solver.bridge.config import BridgeSettings, names_of
from ovos_a2a_solver.bridge.process.startup import (SERVER_EXTRA, StartError, check_database, check_file_limit,
                                                    check_relay_target, claim_store, grpc_port, listen, load_backend,
                                                    report_unreachable_agents, require_metrics,
                                                    sdk_tracing_off_by_default, with_own_store)

LOG = logging.getLogger("ovos_a2a_solver.bridge")


def serve(settings: BridgeSettings, ready: Callable | None = None, verbose: bool = False) -> None:
    """Serve until SIGINT/SIGTERM. ``ready(settings, served, workers)`` is called once the
    port accepts (with ``--workers``: once every worker does), with the ports really bound,
    (the agent's name, its settings) of each persona served and the workers' process ids
    (none when alone). Raises :class:`StartError` or
    :class:`~ovos_a2a_solver.bridge.config.SettingsError` if it cannot start; ``verbose``
    lets uvicorn's own report of a failed start through (a traceback)."""
    sdk_tracing_off_by_default(settings)
    try:
        import uvicorn  # noqa: F401

        from ovos_a2a_solver.bridge.edge.card import read_card_signing_key
        from ovos_a2a_solver.bridge.app import Bridge  # noqa: F401  (what needs the server extra)
    except ModuleNotFoundError as exc:
        raise StartError(f"the bridge needs the server extra (missing: {exc.name}): {SERVER_EXTRA}", 2) from None

    settings.check_exposure()
    require_metrics(settings)
    signing_key = read_card_signing_key(settings)
    files = settings.persona_files() if settings.personas_dir else []
    configured_port = settings.port  # a default store is named for it, also when it is 0
    if not files:
        settings = with_own_store(settings)
    store_locks = []  # this bridge's hold on its SQLite stores, until it stops
    try:
        sock = listen(settings.host, settings.port, names_of("port"))
        try:
            settings = dataclasses.replace(settings, port=sock.getsockname()[1], grpc_port=grpc_port(settings))
            personas = personas_of(settings, files, configured_port)
            for each in personas:
                check_relay_target(each, whole_port=not files)
            check_database(settings.database_url)
            for each in personas:
                store_locks.append(claim_store(each))
            check_file_limit(settings)
            ready = checking_agents_once_ready(ready, personas)
            LOG.debug("settings: %r; tasks kept in %s", settings, ", ".join(each.store for each in personas))
            if settings.workers > 1:
                from ovos_a2a_solver.bridge.process.workers import supervise

                supervise(settings, sock, signing_key, ready, verbose)
                return
            from ovos_a2a_solver.bridge.process.one_process import run_bridge

            bridge = bridge_of(settings, personas, signing_key)
        except BaseException:
            sock.close()
            raise
        run_bridge(bridge, sock, ready, verbose)
    finally:
        for lock in store_locks:
            if lock is not None:
                lock.release()


def personas_of(settings: BridgeSettings, files: list, configured_port: int) -> list[BridgeSettings]:
    """The settings of each persona file of ``--personas-dir`` (``files``), each with a store of its
    own (named for ``configured_port``, the port asked, also when it is 0); ``[settings]`` without."""
    return [with_own_store(settings.for_persona(file), configured_port) for file in files] or [settings]


def bridge_of(settings: BridgeSettings, personas: list[BridgeSettings], signing_key):
    """What one process serves: the ``Bridge`` of ``settings``; with ``--personas-dir``,
    ``PersonaBridges`` of a ``Bridge`` for each of its ``personas`` (their settings), which count in
    one set of metrics (one ``/metrics`` for all of them) and one share of streams a caller
    (whatever persona it streams from). ``signing_key`` signs each card."""
    from ovos_a2a_solver.bridge.app import Bridge, PersonaBridges

    if not settings.personas_dir:
        return Bridge(settings, load_backend(settings), signing_key)
    from ovos_a2a_solver.bridge.edge.stream_shares import stream_counts
    from ovos_a2a_solver.bridge.observe.metrics import metrics_for

    metrics = metrics_for(settings.metrics)
    streams = stream_counts(settings)
    return PersonaBridges(settings, [Bridge(each, load_backend(each), signing_key, metrics=metrics, streams=streams)
                                     for each in personas])


def checking_agents_once_ready(ready: Callable | None, personas: list[BridgeSettings]) -> Callable:
    """``ready``, after which the agents of the relaying ``personas`` are checked in the
    background (see :func:`~.startup.report_unreachable_agents`): the bridge serves at once."""
    def then_check(*args) -> None:
        if ready is not None:
            ready(*args)
        report_unreachable_agents(personas)

    return then_check
