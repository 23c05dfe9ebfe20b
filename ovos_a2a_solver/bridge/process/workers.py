# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""``serve --workers N``: N bridge processes on one listening socket and one store.

The parent binds the port and checks the settings (see ``server.serve``); on SQLite it
then fails the work every earlier run left unfinished, before any worker starts. It binds
one listening socket per worker on that port (``SO_REUSEPORT``), and forks the workers.
Each builds its own persona and :class:`~ovos_a2a_solver.bridge.app.Bridge` and accepts
connections on its socket, as worker ``1..N`` under the replica name ``NAME#N``. The
kernel spreads new connections evenly over the sockets. (On one shared socket, the first
worker to wake takes a whole burst of connections, and keeps them: keep-alive clients
would all be served by one worker.) The parent keeps every socket open, so connections
that reach a worker while it is being started again wait for it. Nothing is sticky:

* on PostgreSQL each worker is a replica (see ``replicas``);
* on SQLite the workers share the file (WAL), and ask each other for what only the one
  running a task has (cancel, live events; see ``siblings``).

The parent only supervises. A worker that dies is started again at once; the new run
fails the tasks the dead one left (see ``OperationLog.interrupted``). SIGINT or SIGTERM
stops every worker gracefully (each drains, as a single bridge does) and the command
ends with status 0; a worker that outstays ``shutdown_grace`` plus a margin is killed.
Workers die with the parent, even when it is killed with -9 (``PR_SET_PDEATHSIG``).

With ``metrics`` on, the workers keep their metrics in one directory of this run's (made
here, removed at the end): each worker's ``/metrics`` shows the sum of all of them (see
``observe.metrics``).
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import select
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable

from ovos_a2a_solver.bridge.config import BridgeSettings, names_of
from ovos_a2a_solver.bridge.storage.database_url import sqlite_path
from ovos_a2a_solver.bridge.observe.metrics import share_between_workers, worker_ended
from ovos_a2a_solver.bridge.process.one_process import run_bridge
from ovos_a2a_solver.bridge.process.service_manager import forget_service_manager, notify
from ovos_a2a_solver.bridge.process.startup import StartError, listen, load_backend

LOG = logging.getLogger("ovos_a2a_solver.bridge")

STOP_MARGIN = 10.0     # seconds a worker gets beyond its own shutdown to end, before it is killed
CRASH_WINDOW = 60.0    # a worker that dies ...
CRASH_LIMIT = 5        # ... this many times within the window is not started again: the bridge stops
PR_SET_PDEATHSIG = 1


def supervise(settings: BridgeSettings, sock: socket.socket, signing_key, ready: Callable | None,
              verbose: bool) -> None:
    """Start ``settings.workers`` workers on ``settings.port`` (``sock`` is bound to it,
    alone: the proof that it is free), call ``ready(settings, ((name, settings),), pids)``
    once all serve, keep them running until SIGINT/SIGTERM, then stop them. Raises
    ``StartError`` when a worker cannot start, or keeps dying."""
    if sqlite_path(settings.database_url) is not None:
        from ovos_a2a_solver.bridge.storage.lost_work import fail_earlier_runs

        failed = asyncio.run(fail_earlier_runs(settings))
        if failed:
            LOG.warning("%d task(s) were interrupted by a restart and are now failed", failed)
    # ``sock`` (bound alone) proved the port free: nobody, not even another bridge's workers
    # (SO_REUSEPORT lets any process of the same user join), listens on it
    sock.close()
    sockets: list[socket.socket] = []
    metrics_dir = tempfile.mkdtemp(prefix="ovos-a2a-metrics-") if settings.metrics else None
    if metrics_dir is not None:
        share_between_workers(metrics_dir)
    try:
        for _ in range(settings.workers):
            sockets.append(listen(settings.host, settings.port, names_of("port"), shared=True))
        group = _Workers(settings, sockets, signing_key, verbose)
        try:
            name = group.start()
            if ready is not None:
                ready(settings, ((name, settings),), group.process_ids())
            failure = group.watch()
        finally:
            group.stop()
    finally:
        for each in sockets:
            each.close()
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
    if failure is not None:
        raise StartError(failure)


class _Workers:
    def __init__(self, settings: BridgeSettings, sockets: list[socket.socket], signing_key, verbose: bool) -> None:
        self.settings = settings
        self.sockets = sockets                  # worker N accepts on sockets[N - 1]
        self.signing_key = signing_key
        self.verbose = verbose
        self.pids: dict[int, int] = {}          # pid -> worker number
        self.crashes: dict[int, list[float]] = {}
        self.stopping = False
        self._previous: dict = {}               # the signal handlers to restore
        self._reports, self._report_to = os.pipe()
        self._pending = b""

    # ---- start ---------------------------------------------------------------------------------------

    def start(self) -> str:
        """Fork every worker; wait until each serves. Returns the agent's name."""
        self._previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        for number in range(1, self.settings.workers + 1):
            self._fork(number)
        waiting, name = set(range(1, self.settings.workers + 1)), ""
        while waiting:
            if self.stopping:
                raise StartError("stopped by a signal while the workers were starting")
            for report in self._read_reports(0.1):
                if report["kind"] == "failed":
                    raise StartError(report["message"], report.get("status", 1))
                waiting.discard(report["worker"])
                name = report["name"]
            for number, how in self._reap():
                raise StartError(f"worker {number} ended while starting ({how}); see the log above")
        return name

    def process_ids(self) -> tuple[int, ...]:
        """The workers' process ids, in the order of their numbers."""
        return tuple(sorted(self.pids, key=self.pids.get))

    def _fork(self, number: int) -> int:
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the worker
            status = 1
            try:
                status = self._work(number, parent)
            finally:
                os._exit(status)
        self.pids[pid] = number
        return pid

    def _work(self, number: int, parent: int) -> int:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        os.close(self._reports)
        forget_service_manager()
        for n, other in enumerate(self.sockets, 1):
            if n != number:
                other.close()
        _die_with(parent)
        settings = dataclasses.replace(self.settings, replica=f"{self.settings.replica}#{number}")
        try:
            from ovos_a2a_solver.bridge.app import Bridge

            bridge = Bridge(settings, load_backend(settings), self.signing_key, worker=number)

            def ready(_settings, served, _workers) -> None:
                self._report({"kind": "ready", "worker": number, "name": served[0][0]})

            run_bridge(bridge, self.sockets[number - 1], ready, self.verbose)
        except Exception as exc:  # one line, as the command reports a failed start (a traceback with --debug)
            if self.verbose:
                LOG.exception("worker %d failed", number)
            text = " ".join(str(exc).split()) or type(exc).__name__
            if not isinstance(exc, (StartError, ValueError)):
                text = f"{type(exc).__name__}: {text}"
            status = getattr(exc, "status", 2 if isinstance(exc, ValueError) else 1)
            self._report({"kind": "failed", "worker": number, "message": f"worker {number}: {text}",
                          "status": status})
            return status
        return 0

    def _report(self, note: dict) -> None:
        os.write(self._report_to, json.dumps(note).encode() + b"\n")

    def _read_reports(self, timeout: float) -> list[dict]:
        readable, _, _ = select.select([self._reports], [], [], timeout)
        if not readable:
            return []
        self._pending += os.read(self._reports, 65536)
        *lines, self._pending = self._pending.split(b"\n")
        return [json.loads(line) for line in lines if line.strip()]

    # ---- supervise -----------------------------------------------------------------------------------

    def watch(self) -> str | None:
        """Until a signal: start again every worker that dies. Returns why the bridge
        must stop instead (a worker that keeps dying), or ``None``."""
        while not self.stopping:
            for report in self._read_reports(0.2):
                if report["kind"] == "failed":
                    LOG.error("%s", report["message"])
            for number, how in self._reap():
                if self.stopping:
                    break
                now = time.monotonic()
                recent = [t for t in self.crashes.get(number, []) if now - t < CRASH_WINDOW] + [now]
                self.crashes[number] = recent
                if len(recent) > CRASH_LIMIT:
                    return (f"worker {number} ended {len(recent)} times within {CRASH_WINDOW:g} s "
                            f"(last: {how}); the bridge stops")
                self._configs_may_have_changed()
                LOG.warning("worker %d ended (%s); started it again (process id %d)", number, how,
                            self._fork(number))
        return None

    def _configs_may_have_changed(self) -> None:
        """A worker that died may have stored a push config without telling the others (it
        tells them right after the commit): they forget which tasks they knew to have none."""
        path = sqlite_path(self.settings.database_url)
        if path is not None:
            from ovos_a2a_solver.bridge.storage.push_configs import SharedGeneration

            SharedGeneration.beside(path).change()

    def _reap(self) -> list[tuple[int, str]]:
        """The workers that ended since the last call: (number, how)."""
        ended = []
        while self.pids:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            number = self.pids.pop(pid, None)
            if number is not None:
                ended.append((number, _how(status)))
                if self.settings.metrics:  # its gauges go; its counts stay in the sums
                    worker_ended(pid)
        return ended

    def _on_signal(self, _sig: int, _frame) -> None:
        if not self.stopping:
            notify("STOPPING=1")
        self.stopping = True

    # ---- stop ----------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop every worker gracefully (SIGTERM), killing those that outstay their grace."""
        self.stopping = True
        for pid in self.pids:
            _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + self.settings.shutdown_grace + STOP_MARGIN
        while self.pids and time.monotonic() < deadline:
            self._read_reports(0.05)
            self._reap()
        for pid, number in list(self.pids.items()):
            LOG.warning("worker %d did not stop within %g s; killing it", number,
                        self.settings.shutdown_grace + STOP_MARGIN)
            _signal(pid, signal.SIGKILL)
        while self.pids:
            self._reap()
            time.sleep(0.01)
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        os.close(self._reports)
        os.close(self._report_to)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _how(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"


def _die_with(parent: int) -> None:
    """End this worker when the parent dies, even by ``kill -9`` (Linux; elsewhere the
    worker outlives it)."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before the line above
        os.kill(os.getpid(), signal.SIGTERM)
