#!/usr/bin/env python3
# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""What the benchmarks share: the servers they measure side by side, the load from wrk, /proc
sampling, percentiles, the snapshot of machine, versions and code, and the run of one benchmark
from its arguments to its JSON file and table.

Servers (each a subprocess with its log in the run's work directory, on a port of its own):

* :class:`BridgeProcess`: the bridge (``python -m ovos_a2a_solver.bridge``) with the given flags;
* :class:`BareProcess`: a bare a2a-sdk server written below (``_bare-server``: the persona in a
  worker thread or an echo; InMemoryTaskStore, or DatabaseTaskStore on SQLite as the bridge sets
  it up; tasks pre-filled on request);
* :class:`PersonaServerProc`: ``ovos-persona-server --a2a-base-url`` as shipped.

Every server answers with the same trivial backend: an OVOS persona whose only handler is
``ovos-solver-failure-plugin`` (one short line), written to the work directory.

A benchmark script builds its parser with :func:`bench_arguments`, then calls
:func:`run_benchmark` with its measure and its table. The bridges of a run import a snapshot of
``ovos_a2a_solver`` taken at its start (:func:`snapshot_code`), so a run measures one version of
the code even if the working tree is edited meanwhile.

Internal: ``python bench/benchlib.py _bare-server --persona FILE [--prefill N] [--db FILE] [--echo [--heartbeat S]]``.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Callable, Optional

PY = sys.executable
PERSONA = {"name": "trivial", "handlers": ["ovos-solver-failure-plugin"]}
HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}
COMPLETED = "TASK_STATE_COMPLETED"
TASK_SEED = 20261130

REPO = Path(__file__).resolve().parent.parent
CODE_ENV: dict[str, str] = {}  # PYTHONPATH of the snapshot the bridge processes run (see snapshot_code)


# ---- percentiles -------------------------------------------------------------------------

def pct(sorted_samples: list[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted list."""
    if not sorted_samples:
        return float("nan")
    rank = max(1, min(len(sorted_samples), int(round(q / 100 * len(sorted_samples) + 0.5))))
    return sorted_samples[rank - 1]


def summary(seconds: list[float]) -> dict:
    s = sorted(seconds)
    if not s:
        return {"n": 0}
    return {"n": len(s), "p50_ms": round(pct(s, 50) * 1000, 3), "p99_ms": round(pct(s, 99) * 1000, 3),
            "max_ms": round(s[-1] * 1000, 3), "mean_ms": round(statistics.fmean(s) * 1000, 3)}


def median_p90(samples: list[float], digits: Optional[int] = None) -> dict:
    """Median and p90 (the sample 90 % of the way up the sorted list) in ms, and the count;
    rounded to ``digits`` if given."""
    ordered = sorted(samples)
    median = statistics.median(ordered) * 1000
    p90 = ordered[int(len(ordered) * 0.9) - 1] * 1000
    if digits is not None:
        median, p90 = round(median, digits), round(p90, digits)
    return {"median_ms": median, "p90_ms": p90, "n": len(ordered)}


# ---- /proc ---------------------------------------------------------------------------------

def proc_status(pid: int) -> dict:
    """VmRSS / VmHWM (KiB) and Threads of a process, from /proc."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    out[key] = int(value.split()[0])
                elif key == "Threads":
                    out[key] = int(value)
    except OSError:
        pass
    return out


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by a process and its live children (the
    workers of ``serve --workers``)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")
    children = []
    for thread in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            children += [int(child) for child in thread.read_text().split()]
        except OSError:
            pass
    return own + sum(proc_cpu(child) for child in children)


def machine_busy() -> float:
    """CPU seconds all CPUs of the machine spent busy so far (/proc/stat), to see other load."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


async def pause_unless_stopped(stop: asyncio.Event, period: float) -> None:
    """Wait ``period`` seconds, or less if ``stop`` is set meanwhile."""
    try:
        await asyncio.wait_for(stop.wait(), period)
    except asyncio.TimeoutError:
        pass


async def sample_process(pid: int, stop: asyncio.Event, samples: list, period: float = 0.2) -> None:
    """Append :func:`proc_status` of ``pid`` (with ``t``, a perf_counter time) to ``samples``
    every ``period`` seconds until ``stop`` is set."""
    while not stop.is_set():
        st = proc_status(pid)
        st["t"] = time.perf_counter()
        samples.append(st)
        await pause_unless_stopped(stop, period)


# ---- CPU per request: a server's processes and the PostgreSQL processes serving it --------

def own_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by one process alone (NaN once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def process_tree(pid: int) -> list[int]:
    """``pid`` and its live descendants (the workers of ``serve --workers``)."""
    out = [pid]
    for thread in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            for child in thread.read_text().split():
                out += process_tree(int(child))
        except OSError:
            pass
    return out


def tcp_ports(pids: list[int]) -> set[int]:
    """The local ports of the TCP sockets the processes ``pids`` hold open."""
    inodes: set[str] = set()
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").glob("*"):
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    ports = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pids[0]}/net/{table}").read_text().splitlines()[1:]
        except (OSError, IndexError):
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def postgres_processes() -> dict[int, str]:
    """The PostgreSQL server processes of this machine: pid -> process title (a backend's says
    its user, database and client, ``… 127.0.0.1(PORT) …``)."""
    out = {}
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() != "postgres":
                continue
            out[int(comm.parent.name)] = (comm.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace").strip()
        except (OSError, ValueError):
            continue
    return out


class CpuAccount:
    """CPU seconds (user + system) spent between :meth:`start` and :meth:`stop` by a server (its
    process and workers) and, with ``postgres``, by the PostgreSQL processes working for it:

    * ``postgres``: the backends whose client is one of the server's connections (found by the
      client port in their process titles), those opened meanwhile counted whole;
    * ``postgres_shared``: the PostgreSQL server's own processes (postmaster, WAL writer,
      checkpointer, autovacuum), which work for every client of that server: on a machine where
      nothing else uses it, for this one.

    A backend that ends before :meth:`stop` takes its CPU with it: ``postgres_backends_gone``
    says how many did."""

    def __init__(self, pid: int, postgres: bool = False) -> None:
        self.pid = pid
        self.postgres = postgres

    def _postgres_now(self) -> tuple[dict[int, float], dict[int, float]]:
        """(serving backends, shared processes): pid -> CPU seconds so far."""
        ports = tcp_ports(process_tree(self.pid))
        serving, shared = {}, {}
        for pid, title in postgres_processes().items():
            client = re.search(r"\((\d+)\)", title)
            if client is not None:
                if int(client.group(1)) in ports:
                    serving[pid] = own_cpu(pid)
            elif "[local]" not in title:
                shared[pid] = own_cpu(pid)
        return serving, shared

    def start(self) -> "CpuAccount":
        self.server0 = proc_cpu(self.pid)
        if self.postgres:
            self.serving0, self.shared0 = self._postgres_now()
        return self

    def stop(self) -> dict:
        """CPU seconds of each part since :meth:`start`."""
        out = {"server": proc_cpu(self.pid) - self.server0}
        if self.postgres:
            serving, shared = self._postgres_now()
            out["postgres"] = sum(cpu - self.serving0.get(pid, 0.0) for pid, cpu in serving.items())
            out["postgres_shared"] = sum(cpu - self.shared0.get(pid, 0.0) for pid, cpu in shared.items())
            out["postgres_backends"] = len(serving)
            out["postgres_backends_gone"] = len(set(self.serving0) - set(serving))
        return out


def cpu_per_request(cpu: dict, requests: int) -> dict:
    """:meth:`CpuAccount.stop`'s CPU seconds as ms per request, and their ``total``."""
    if not requests:
        return {}
    parts = {key: round(cpu[key] * 1000 / requests, 3) for key in ("server", "postgres", "postgres_shared")
             if key in cpu}
    parts["total"] = round(sum(parts.values()), 3)
    return parts


# ---- which code, which versions ----------------------------------------------------------

def sources_digest(root: Path) -> str:
    """A short digest of the package sources below ``root`` (paths and contents)."""
    import hashlib
    digest = hashlib.sha256()
    for path in sorted((root / "ovos_a2a_solver").rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def snapshot_code(workdir: Path) -> dict:
    """Copy the package as it is now; every bridge of this run imports the copy (PYTHONPATH
    comes before the editable install), so all parts measure the same code even if the working
    tree is edited meanwhile."""
    target = workdir / "code"
    shutil.copytree(REPO / "ovos_a2a_solver", target / "ovos_a2a_solver",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    CODE_ENV["PYTHONPATH"] = os.pathsep.join([str(target), *filter(None, [os.environ.get("PYTHONPATH")])])
    sys.path.insert(0, str(target))  # this process too (bench_store.py pre-fills through the bridge's store)
    state = source_state()
    state["snapshot_sha256"] = sources_digest(target)
    return state


def source_state() -> dict:
    """Which code: git HEAD, files changed since, and a digest of the package sources."""
    root = REPO
    state = {"sources_sha256": sources_digest(root)}
    for key, cmd in (("git_head", ["git", "rev-parse", "--short", "HEAD"]),
                     ("git_changed", ["git", "status", "--porcelain", "--", "ovos_a2a_solver"])):
        try:
            out = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        state[key] = [line for line in out.splitlines() if line.strip()] if key == "git_changed" else out.strip()
    return state


def versions() -> dict:
    """The installed versions of the distributions the benchmarks measure or run on."""
    import importlib.metadata as md
    out = {}
    for dist in ("a2a-sdk", "ovos-persona", "ovos-persona-server", "ovos-solver-failure-plugin", "httpx",
                 "uvicorn", "starlette", "sqlalchemy", "aiosqlite"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = None
    return out


# ---- the deterministic task set (shared by the SQLite pre-fill and the bare server) -------

def make_tasks(n: int, seed: int = TASK_SEED, per_context: int = 10):
    """``n`` completed tasks shaped like the bridge's: ``per_context`` tasks per context, a user
    message and the agent's "accepted" message in history, an ``answer`` artifact, distinct
    microsecond timestamps spread over 30 days."""
    from a2a.types import Artifact, Message, Part, Role, Task, TaskState, TaskStatus

    rng = random.Random(seed)
    start_us = 1_780_000_000_000_000
    tasks = []
    context = ""
    for i in range(n):
        if i % per_context == 0:
            context = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        task_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        task = Task(id=task_id, context_id=context,
                    status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED))
        task.status.timestamp.FromMicroseconds(start_us + i * 25_000_000 + rng.randrange(20_000_000))
        task.history.append(Message(role=Role.ROLE_USER, message_id=f"{rng.getrandbits(128):032x}",
                                    task_id=task_id, context_id=context, parts=[Part(text=f"question {i}")]))
        task.history.append(Message(role=Role.ROLE_AGENT, message_id=f"{rng.getrandbits(128):032x}",
                                    parts=[Part(text="Message accepted; the persona is working on it.")]))
        task.artifacts.append(Artifact(artifact_id="answer", name="answer",
                                       parts=[Part(text="please install a brain before asking me questions"),
                                              Part(text="")]))
        tasks.append(task)
    rng.shuffle(tasks)  # insertion order is not time order
    return tasks


# ---- the bare a2a-sdk server, run as a subprocess (``benchlib.py _bare-server``) ------------

def bare_server_main(argv: list[str]) -> None:
    """Serve the persona (or an echo) on a bare a2a-sdk JSON-RPC server on a free loopback port;
    print ``bench-bare: serving at URL`` once it listens."""
    parser = argparse.ArgumentParser(prog="benchlib.py _bare-server")
    parser.add_argument("--persona", required=True)
    parser.add_argument("--prefill", type=int, default=0)
    parser.add_argument("--db", default="", help="SQLite file: DatabaseTaskStore instead of InMemoryTaskStore")
    parser.add_argument("--echo", action="store_true", help="answer 'echo: TEXT' on the event loop, no persona")
    parser.add_argument("--heartbeat", type=float, default=1.0,
                        help="with --echo: seconds between the status updates of a 'sleep:N' message")
    parser.add_argument("--tuned-gc", action="store_true",
                        help="once serving, the garbage collector tuned as the bridge tunes its own")
    args = parser.parse_args(argv)

    import logging

    import uvicorn
    from a2a.helpers import new_task_from_user_message
    from a2a.server.agent_execution import AgentExecutor
    from a2a.server.context import ServerCallContext
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part
    from a2a.utils.constants import TransportProtocol
    from a2a.utils.errors import UnsupportedOperationError
    from ovos_bus_client.session import Session
    from ovos_persona import Persona
    from starlette.applications import Starlette

    logging.basicConfig(level=logging.WARNING)
    config = json.loads(Path(args.persona).read_text())
    persona = Persona(config["name"], config)

    def reply(text: str, session_id: str) -> str:
        # the same persona calls as the bridge's PersonaBackend.reply
        session = Session(session_id)
        messages = persona.get_messages(text, session)
        said = [s.strip() for s in persona.stream(messages, session) if s and s.strip()]
        if said:
            persona.remember(text, " ".join(said), session)
        return " ".join(said)

    from concurrent.futures import ThreadPoolExecutor as Threads

    from a2a.types import TaskState

    sleepers = Threads(max_workers=100_000, thread_name_prefix="bare-sleep")  # a thread per running turn

    async def sleep_with_heartbeats(updater, seconds: float) -> None:
        """As the bridge's echo backend answers ``sleep:N``: accepted, then N seconds of work on a
        thread of its own (a blocking backend's turn), with a status update every heartbeat."""
        await updater.update_status(TaskState.TASK_STATE_WORKING, message=updater.new_agent_message(
            [Part(text="Message accepted; the persona is working on it.")]))
        work = asyncio.get_running_loop().run_in_executor(sleepers, time.sleep, seconds)
        started = time.monotonic()
        while True:
            done, _ = await asyncio.wait([work], timeout=args.heartbeat)
            if done:
                return
            working = round(time.monotonic() - started)
            await updater.update_status(TaskState.TASK_STATE_WORKING,
                                        metadata={"heartbeat": working, "note": f"Still working ({working} s)."})

    class PersonaExecutor(AgentExecutor):
        async def execute(self, context, event_queue) -> None:
            task = context.current_task
            if task is None:
                task = new_task_from_user_message(context.message)
                await event_queue.enqueue_event(task)
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            if args.echo and context.get_user_input().startswith("sleep:"):
                await sleep_with_heartbeats(updater, float(context.get_user_input()[6:].split()[0]))
                answer = "echo: " + context.get_user_input()
            elif args.echo:
                answer = "echo: " + context.get_user_input()
            else:
                answer = await asyncio.to_thread(reply, context.get_user_input(), task.context_id)
            if not answer:
                await updater.failed()
                return
            await updater.add_artifact([Part(text=answer)], artifact_id="answer", name="answer")
            await updater.complete()

        async def cancel(self, context, event_queue) -> None:
            raise UnsupportedOperationError(message="not cancelable")

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}/a2a"
    card = AgentCard(
        name=config["name"], description="bare a2a-sdk baseline", version="1.0",
        supported_interfaces=[AgentInterface(url=base + "/", protocol_binding=TransportProtocol.JSONRPC,
                                             protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True), default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="chat", name="chat", description="chat", tags=["chat"])])
    if args.db:
        # the same store and SQLite settings as the bridge (DatabaseTaskStore, WAL, synchronous=NORMAL)
        from a2a.server.tasks import DatabaseTaskStore
        from sqlalchemy import event
        from sqlalchemy.ext.asyncio import create_async_engine

        engine = create_async_engine(f"sqlite+aiosqlite:///{args.db}", connect_args={"timeout": 30})

        @event.listens_for(engine.sync_engine, "connect")
        def _pragmas(connection, _record) -> None:
            cursor = connection.cursor()
            for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "busy_timeout=30000"):
                cursor.execute(f"PRAGMA {pragma}")
            cursor.close()

        store = DatabaseTaskStore(engine)
    else:
        store = InMemoryTaskStore()
    if args.prefill:
        async def fill() -> None:
            context = ServerCallContext()
            for task in make_tasks(args.prefill):
                await store.save(task, context)
        asyncio.run(fill())
    handler = DefaultRequestHandler(agent_executor=PersonaExecutor(), task_store=store, agent_card=card)
    routes = list(create_agent_card_routes(card)) + list(
        create_agent_card_routes(card, card_url="/a2a/.well-known/agent-card.json"))
    for rpc_url in ("/a2a", "/a2a/"):
        routes += create_jsonrpc_routes(handler, rpc_url=rpc_url)
    app = Starlette(routes=routes)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))

    async def run() -> None:
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not serving.done():
            await asyncio.sleep(0.02)
        if args.tuned_gc:  # what start-up built frozen, the young collected less often
            import gc

            from ovos_a2a_solver.bridge.process.one_process import YOUNG_COLLECTION_EVERY

            gc.collect()
            gc.freeze()
            gc.set_threshold(YOUNG_COLLECTION_EVERY, *gc.get_threshold()[1:])
        print(f"bench-bare: serving at {base}", flush=True)
        await serving

    asyncio.run(run())


# ---- server processes --------------------------------------------------------------------

def free_port() -> int:
    """A loopback TCP port free at the time of asking."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """A server subprocess; stdout+stderr go to a log file (never a pipe this process drains)."""

    label = "server"

    def __init__(self, workdir: Path, name: str) -> None:
        self.workdir = workdir
        self.name = name
        self.log_path = workdir / f"{name}.log"
        self.proc: subprocess.Popen | None = None
        self.base = ""       # http://127.0.0.1:P/a2a (card at base + /.well-known/agent-card.json)
        self.rpc_url = ""    # the card's JSON-RPC 1.0 interface URL
        self.startup_s = 0.0

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def running(self) -> bool:
        """Whether the process was started and has not exited."""
        return self.proc is not None and self.proc.poll() is None

    @property
    def card_url(self) -> str:
        return self.base + "/.well-known/agent-card.json"

    env: dict[str, str] = {}  # set for this server only
    postgres = False  # whether it keeps its state in PostgreSQL (whose processes' CPU then counts too)

    def _spawn(self, cmd: list[str]) -> None:
        log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1", **CODE_ENV, **self.env},
                                     cwd=self.workdir)
        log.close()

    def _wait_line(self, pattern: str, timeout: float) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = re.search(pattern, self.log_path.read_text(errors="replace"))
            if match:
                return match
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"{self.name} did not start (exit {self.proc.poll()}):\n{self.log_tail()}")

    def _resolve_card(self, timeout: float = 60) -> None:
        import httpx
        deadline = time.monotonic() + timeout
        while True:
            try:
                card = httpx.get(self.card_url, timeout=5).json()
                break
            except (httpx.HTTPError, ValueError):
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError(f"{self.name}: no card at {self.card_url}:\n{self.log_tail()}")
                time.sleep(0.2)
        for interface in card.get("supportedInterfaces", []):
            if interface.get("protocolBinding") == "JSONRPC" and interface.get("protocolVersion", "").startswith("1."):
                self.rpc_url = interface["url"]
                return
        raise RuntimeError(f"{self.name}: no JSON-RPC 1.0 interface on its card: {card}")

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def log_findings(self) -> dict:
        """Counts of worrying lines in the server's log."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return {}
        checks = {"traceback": r"Traceback", "error_lines": r"\bERROR\b", "warning_lines": r"\bWARNING\b",
                  "database_locked": r"database is locked", "busy": r"is busy"}
        return {k: len(re.findall(p, text)) for k, p in checks.items()}

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class BridgeProcess(ServerProcess):
    """``python -m ovos_a2a_solver.bridge --port 0 FLAGS`` (the run's snapshot of the code, if
    taken), with ``env`` added to its environment."""

    label = "bridge"

    def __init__(self, workdir: Path, name: str, flags: list[str], env: Optional[dict[str, str]] = None) -> None:
        super().__init__(workdir, name)
        self.flags = flags
        self.env = dict(env or {})
        self.postgres = any(flag.startswith("postgresql") for flag in flags)

    def start(self) -> "BridgeProcess":
        t0 = time.monotonic()
        self._spawn([PY, "-m", "ovos_a2a_solver.bridge", "--port", "0", *self.flags])
        self.base = self._wait_line(r'ovos-a2a: serving ".*" at (http://\S+) \(card', 90).group(1)
        self._resolve_card()
        self.startup_s = time.monotonic() - t0
        return self


class BareProcess(ServerProcess):
    """The bare a2a-sdk server of :func:`bare_server_main`: the persona (or an echo), with an
    InMemoryTaskStore or, given ``db``, the bridge's kind of SQLite store."""

    label = "bare_sdk"

    def __init__(self, workdir: Path, name: str, persona: Path, prefill: int = 0, db: str = "",
                 echo: bool = False, traced: bool = True, heartbeat: float = 1.0, tuned_gc: bool = False) -> None:
        super().__init__(workdir, name)
        self.tuned_gc = tuned_gc
        self.persona = persona
        self.prefill = prefill
        self.db = db
        self.echo = echo
        self.heartbeat = heartbeat
        if not traced:  # as the bridge runs it: the SDK's OpenTelemetry spans off
            self.env = {"OTEL_INSTRUMENTATION_A2A_SDK_ENABLED": "false"}
        if db:
            self.label = "bare_sdk_sqlite"

    def start(self) -> "BareProcess":
        t0 = time.monotonic()
        self._spawn([PY, str(Path(__file__).resolve()), "_bare-server", "--persona", str(self.persona),
                     "--prefill", str(self.prefill), *(["--db", self.db] if self.db else []),
                     *(["--echo", "--heartbeat", str(self.heartbeat)] if self.echo else []),
                     *(["--tuned-gc"] if self.tuned_gc else [])])
        self.base = self._wait_line(r"bench-bare: serving at (http://\S+)", 300).group(1)
        self._resolve_card()
        self.startup_s = time.monotonic() - t0
        return self


class PersonaServerProc(ServerProcess):
    """``ovos-persona-server --persona FILE --a2a-base-url http://127.0.0.1:P/a2a`` as shipped
    (its own ``uvicorn.run(..., log_level="debug")``)."""

    label = "persona_server"

    def __init__(self, workdir: Path, name: str, persona: Path) -> None:
        super().__init__(workdir, name)
        self.persona = persona
        self.executable = Path(PY).parent / "ovos-persona-server"

    def start(self) -> "PersonaServerProc":
        t0 = time.monotonic()
        for _attempt in range(3):
            port = free_port()
            self.base = f"http://127.0.0.1:{port}/a2a"
            self._spawn([str(self.executable), "--persona", str(self.persona), "--host", "127.0.0.1",
                         "--port", str(port), "--a2a-base-url", self.base])
            try:
                self._resolve_card(90)
                self.startup_s = time.monotonic() - t0
                return self
            except RuntimeError:
                if "address already in use" not in self.log_tail().lower():
                    raise
                self.stop()
        raise RuntimeError("ovos-persona-server: no free port after 3 attempts")


# ---- SendMessage requests ---------------------------------------------------------------

def send_body(rid: int, text: str = "hello") -> dict:
    """A JSON-RPC ``SendMessage`` of one user text part with a fresh messageId."""
    return {"jsonrpc": "2.0", "id": rid, "method": "SendMessage",
            "params": {"message": {"role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": [{"text": text}]}}}


def classify(status: int, data) -> str | None:
    """None for a COMPLETED task with an answer, else the kind of error."""
    if status != 200:
        return f"http {status}"
    if not isinstance(data, dict):
        return "not json-rpc"
    if "error" in data:
        err = data["error"] or {}
        return f"rpc {err.get('code')}: {str(err.get('message'))[:70]}"
    task = (data.get("result") or {}).get("task")
    if not task:
        return "no task in result"
    state = task.get("status", {}).get("state")
    if state != COMPLETED:
        return f"state {state}"
    if not any(p.get("text") for a in task.get("artifacts", []) for p in a.get("parts", [])):
        return "completed without answer"
    return None


async def keepalive_post(url: str, n: int) -> dict:
    """Sequential SendMessage on one connection (unloaded latency, and a second NODELAY check)."""
    import httpx
    lat, errors = [], Counter()
    async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=1), headers=HEADERS) as hc:
        for i in range(n + 5):
            t0 = time.perf_counter()
            r = await hc.post(url, content=json.dumps(send_body(i)))
            kind = classify(r.status_code, r.json())
            if i >= 5:
                if kind:
                    errors[kind] += 1
                else:
                    lat.append(time.perf_counter() - t0)
    out = summary(lat)
    out["errors"] = dict(errors)
    return out


# ---- wrk as the load ----------------------------------------------------------------------

#: wrk's Lua around a script's ``request()``: each thread numbered (``tid``) and counting its
#: answers, one done when its HTTP status is 200 and its body holds DONE_WHEN; ``done`` prints the
#: line :func:`wrk_round` reads
WRK_COUNTS = r"""
local threads, counter = {}, 0
function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
  table.insert(threads, thread)
end
function init(args) n, ok, bad, busy = 0, 0, 0, 0 end
function response(status, headers, body)
  if status == 200 and body:find("DONE_WHEN", 1, true) then ok = ok + 1
  else
    bad = bad + 1
    if status == 429 then busy = busy + 1 end
  end
end
function done(summary, latency, requests)
  local good, errors, refused = 0, 0, 0
  for _, t in ipairs(threads) do
    good = good + t:get("ok"); errors = errors + t:get("bad"); refused = refused + t:get("busy")
  end
  io.write(string.format('WRK {"ok":%d,"bad":%d,"busy":%d,"seconds":%f,"p50_ms":%f,"p99_ms":%f}\n', good, errors,
    refused,
    summary.duration / 1e6, latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
"""


def wrk_script(requests: str, done_when: str) -> str:
    """A wrk script: ``requests`` (Lua defining ``request()``, which may read ``tid`` and count
    ``n``) inside :data:`WRK_COUNTS`, an answer done when it holds ``done_when``."""
    return WRK_COUNTS.replace("DONE_WHEN", done_when) + requests


#: SendMessage with a fresh messageId per request; counts COMPLETED answers per thread.
#: The ids carry RUN, unique per wrk run: Lua's math.random repeats its sequence in every
#: run, and a messageId sent again is a replay for the bridge (no persona turn), not work.
WRK_SCRIPT = wrk_script(r"""
function request()
  n = n + 1
  local body = '{"jsonrpc":"2.0","id":' .. n .. ',"method":"SendMessage","params":{"message":' ..
    '{"messageId":"wrk-RUN-' .. tid .. '-' .. n ..
    '","role":"ROLE_USER","parts":[{"text":"hello"}]}}}'
  return wrk.format("POST", nil, {["Content-Type"] = "application/json", ["A2A-Version"] = "1.0"}, body)
end
""", COMPLETED)


def wrk_round(url: str, pid: int, connections: int, seconds: float, workdir: Path, pin: bool,
              postgres: bool = False, lua: str = WRK_SCRIPT) -> dict:
    """One round of wrk (C, two threads) against ``url``: completed SendMessages per second, and
    the CPU per completed request of the server (``pid``) and, with ``postgres``, of the
    PostgreSQL processes working for it (:class:`CpuAccount`), in ms: ``cpu_ms_per_ok``.

    With ``pin``, wrk runs on CPU 0 and the server was pinned to CPU 1, so the load generator
    does not compete with the server for its core. ``lua``: the requests and what counts as done
    (:data:`WRK_SCRIPT` by default: its ``RUN`` is made unique to the round, and its ``done``
    prints the line read here)."""
    script = workdir / "send.lua"
    script.write_text(lua.replace("RUN", uuid.uuid4().hex))
    command = ["wrk", "-t2", f"-c{connections}", f"-d{seconds:g}s", "-s", str(script), url]
    if pin:
        command = ["taskset", "-c", "0", *command]
    account = CpuAccount(pid, postgres).start()
    out = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60).stdout
    cpu = account.stop()
    line = next((l for l in out.splitlines() if l.startswith("WRK ")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no result: {out[-500:]}")
    data = json.loads(line[4:])
    data["rps"] = round(data["ok"] / data["seconds"], 2)
    data["cpu_s"] = {key: round(value, 3) for key, value in cpu.items()}
    data["cpu_ms_per_ok"] = cpu_per_request(cpu, data["ok"])
    data["server_cpu_ms_per_ok"] = data["cpu_ms_per_ok"].get("server")
    return data


def wait_quiet(pid: int, timeout: float = 10.0) -> None:
    """Wait until the server ``pid`` used less than 10 ms of CPU in 0.2 s (or ``timeout``
    passed): the requests a round's wrk left in flight when it stopped are finished, so they
    neither take the next round's CPU nor, at the bridge, its slots (answered "busy")."""
    deadline = time.monotonic() + timeout
    before = proc_cpu(pid)
    while time.monotonic() < deadline:
        time.sleep(0.2)
        now = proc_cpu(pid)
        if now - before < 0.01:
            return
        before = now


def within_rounds(a: list, b: list) -> dict | None:
    """The ratios of ``a`` over ``b`` round by round (figures of two servers measured in the same
    rounds): their median and range; rounds where either has no figure are left out (None if all are)."""
    each = [x / y for x, y in zip(a, b) if x and y]
    if not each:
        return None
    return {"median": round(statistics.median(each), 3), "min": round(min(each), 3), "max": round(max(each), 3)}


def wrk_rounds(servers: list, workdir: Path, connections: int, seconds: float, rounds: int, pin: bool,
               ratios: list[tuple[str, str]], before_stop=None, lua_for=None) -> dict:
    """Start those of ``servers`` not yet running (side by side), then ``rounds`` rounds of
    :func:`wrk_round` against each, the order alternating (``lua_for(server)``, if given, is the
    script of each server's rounds, made once all are started); ``before_stop(result)`` if given;
    stop them all. Their rounds, medians and, for each pair ``(a, b)`` of ``ratios``, the ratio of
    the median req/s and the median of the ratios within a round (the machine's drift between
    rounds falls out of the latter)."""
    result: dict = {"load": "wrk", "connections": connections, "seconds": seconds, "rounds": rounds,
                    "pinned": pin, "servers": {}}
    try:
        with ThreadPoolExecutor(len(servers)) as pool:
            for future in [pool.submit(s.start) for s in servers if not s.running]:
                future.result()
        if pin:
            for s in servers:
                subprocess.run(["taskset", "-a", "-p", "-c", "1", str(s.pid)], capture_output=True, check=True)
        scripts = {s.name: lua_for(s) if lua_for is not None else WRK_SCRIPT for s in servers}
        for r in range(rounds):
            for s in (servers if r % 2 == 0 else servers[::-1]):
                wait_quiet(s.pid)
                res = wrk_round(s.rpc_url, s.pid, connections, seconds, workdir, pin, s.postgres, scripts[s.name])
                result["servers"].setdefault(s.name, {"rounds": []})["rounds"].append(res)
                cpu = res["cpu_ms_per_ok"]
                print(f"  round {r} {s.name:17s} {res['rps']:8.1f} req/s  p50 {res['p50_ms']:7.2f}  "
                      f"p99 {res['p99_ms']:7.2f} ms  errors {res['bad']} (busy {res['busy']})  CPU {cpu.get('total', 0):.2f} ms/req"
                      + (f" (server {cpu['server']:.2f}, PostgreSQL {cpu['postgres']:.2f} + shared "
                         f"{cpu['postgres_shared']:.2f})" if "postgres" in cpu else ""), flush=True)
        if before_stop is not None:
            before_stop(result)
    finally:
        for s in servers:
            s.stop()
    for name, entry in result["servers"].items():
        entry["median_rps"] = statistics.median(x["rps"] for x in entry["rounds"])
        entry["median_p99_ms"] = statistics.median(x["p99_ms"] for x in entry["rounds"])
        entry["median_cpu_ms_per_ok"] = {key: round(statistics.median(x["cpu_ms_per_ok"].get(key, float("nan"))
                                                                      for x in entry["rounds"]), 3)
                                         for key in entry["rounds"][0]["cpu_ms_per_ok"]}
        print(f"  median CPU per request {name:17s} " + ", ".join(
            f"{key} {value:.3f}" for key, value in entry["median_cpu_ms_per_ok"].items()) + " ms", flush=True)
    rps = {k: v["median_rps"] for k, v in result["servers"].items()}
    result["ratios"] = {f"{a}/{b}": round(rps[a] / rps[b], 3) for a, b in ratios}
    result["ratios_within_rounds"] = {f"{a}/{b}": within_rounds([x["rps"] for x in result["servers"][a]["rounds"]],
                                                               [x["rps"] for x in result["servers"][b]["rounds"]])
                                      for a, b in ratios}
    if ratios:
        print(f"  ratios {result['ratios']}; within rounds {result['ratios_within_rounds']}", flush=True)
    return result


# ---- a bare a2a-sdk client for synchronous callers -----------------------------------------

def use_test_helpers() -> None:
    """Make the test suite's helpers importable as ``support.…`` (``test/support/agent_process.py``,
    ``test/support/bridge_process.py``, …)."""
    helpers = str(REPO / "test")
    if helpers not in sys.path:
        sys.path.insert(0, helpers)


def user_message(text: str, context_id: str = ""):
    """A ``SendMessageRequest`` of one user text part with a fresh messageId."""
    from a2a.types import Message, Part, Role, SendMessageRequest

    message = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=text)],
                      context_id=context_id)
    return SendMessageRequest(message=message)


class SdkClientThread:
    """The baseline client: one a2a-sdk client made by ``create_client`` as its docs show, on an
    event loop of its own in a daemon thread, so synchronous code can call it (:meth:`run`)."""

    def __init__(self, url: str, streaming: bool = False, timeout: float = 60) -> None:
        import threading

        import httpx
        from a2a.client import ClientConfig, create_client

        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()

        async def make():
            self.http = httpx.AsyncClient(timeout=timeout)
            return await create_client(url, client_config=ClientConfig(streaming=streaming, httpx_client=self.http))

        self.client = self.run(make())

    def run(self, coro):
        """Run ``coro`` on the client's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        """Close the client's HTTP connections and stop its loop."""
        self.run(self.http.aclose())
        self.loop.call_soon_threadsafe(self.loop.stop)


# ---- one benchmark run: arguments, snapshot, JSON, table ------------------------------------

def machine_brief() -> dict:
    """The Python version and the CPU count, for a result file."""
    return {"python": platform.python_version(), "cpus": os.cpu_count()}


def write_json(path, data: dict) -> None:
    """Write ``data`` to ``path`` as indented JSON (its folder made if missing)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(data, indent=2) + "\n")


def bench_arguments(doc: str, quick: str) -> argparse.ArgumentParser:
    """A parser with the flags every server benchmark takes: ``--json``, ``--quick`` (whose
    help is ``quick``) and ``--keep``."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", default="", help="write the results to this file")
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--keep", action="store_true", help="keep the work directory (server logs)")
    return parser


def add_round_arguments(parser: argparse.ArgumentParser) -> None:
    """``--seconds``, ``--concurrency`` and ``--rounds`` of the SendMessage throughput benchmarks."""
    parser.add_argument("--seconds", type=float, default=None, help="measured seconds per round (10; quick 3)")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=None, help="rounds per server (3; quick 2)")


def resolve_round_arguments(args: argparse.Namespace) -> None:
    """Fill in the defaults of :func:`add_round_arguments` that depend on ``--quick``."""
    args.seconds = args.seconds if args.seconds is not None else (3.0 if args.quick else 10.0)
    args.rounds = args.rounds if args.rounds is not None else (2 if args.quick else 3)


def run_benchmark(part: str, args: argparse.Namespace, measure: Callable[[argparse.Namespace, Path, Path], dict],
                  report: Optional[Callable[[dict], None]] = None) -> dict:
    """Run one benchmark and record it as ``{"meta": …, part: measure(args, workdir, persona)}``.

    ``meta`` holds the date, machine, versions, arguments, persona, load average at start and
    end, the code measured (:func:`snapshot_code`) and the seconds taken. The JSON is written to
    ``args.json`` (if given) even when the measure fails; the work directory is removed unless
    ``args.keep``. Then ``report`` prints the result as a table."""
    started = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix="bench-bridge-"))
    persona = workdir / "trivial.json"
    persona.write_text(json.dumps(PERSONA))
    results: dict = {
        "meta": {"date": datetime.now().isoformat(timespec="seconds"), "python": platform.python_version(),
                 "cpus": os.cpu_count(), "machine": platform.machine(), "versions": versions(),
                 "args": {k: v for k, v in vars(args).items()}, "persona": PERSONA,
                 "loadavg_start": open("/proc/loadavg").read().split()[:3], "code": snapshot_code(workdir)},
    }
    results["meta"]["part_s"] = {}
    try:
        t0 = time.perf_counter()
        results[part] = measure(args, workdir, persona)
        results["meta"]["part_s"][part] = round(time.perf_counter() - t0, 1)
        if sources_digest(REPO) != results["meta"]["code"]["sources_sha256"]:
            results["meta"].setdefault("code_changed_during", []).append(part)
            print(f"  note: the working tree's ovos_a2a_solver changed during part {part!r}; "
                  f"this run measures the snapshot taken at its start", flush=True)
    finally:
        results["meta"]["total_s"] = round(time.perf_counter() - started, 1)
        results["meta"]["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
        if args.json:
            write_json(args.json, results)
        if args.keep:
            print(f"work directory kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print("\n" + "=" * 86)
    if report is not None:
        report(results[part])
    print("=" * 86)
    code = results["meta"]["code"]
    print(f"code measured: snapshot of the working tree at start (HEAD {code['git_head']} + "
          f"{len(code['git_changed'])} changed file(s), sources {code['snapshot_sha256']})"
          + (f"; the working tree changed during {results['meta']['code_changed_during']}"
             if results["meta"].get("code_changed_during") else ""))
    print(f"total {results['meta']['total_s']} s" + (f"; JSON in {args.json}" if args.json else ""))
    return results


if __name__ == "__main__":
    if sys.argv[1:2] != ["_bare-server"]:
        raise SystemExit("usage: benchlib.py _bare-server --persona FILE [--prefill N] [--db FILE] [--echo]; "
                         "the benchmarks are the bench_*.py scripts")
    bare_server_main(sys.argv[2:])
