#!/usr/bin/env python3
"""Bridge benchmarks: the bridge (``ovos-a2a serve``) side by side with a bare a2a-sdk server
and ``ovos-persona-server --a2a-base-url``, all on loopback, interleaved.

    python bench/bench_bridge.py [--seconds 10] [--concurrency 16] [--json bench/results/bridge.json] [--quick]
                                 [--only send|send-wrk|send-workers|streams|store] [--pin] [--keep]

Every server answers with the same trivial backend: an OVOS persona whose only handler is
``ovos-solver-failure-plugin`` (one short line), written to a temporary directory.

1. SendMessage throughput and latency: a closed loop of N async httpx clients POSTs JSON-RPC
   ``SendMessage`` (``A2A-Version: 1.0``, a fresh messageId, no contextId) for ``--seconds`` per
   round, against (a) the bridge (SQLite store, ``--max-concurrent`` = N so its "busy" limit does
   not bite), (b) a bare a2a-sdk server written below (InMemoryTaskStore, the same persona calls
   in a worker thread), (c) ovos-persona-server as shipped, and, as a diagnostic, (d) the bare
   server of (b) on the bridge's store (DatabaseTaskStore on SQLite, WAL, synchronous=NORMAL).
   Rounds alternate the order; medians over rounds and the ratios are reported. Only COMPLETED
   tasks count; everything else is an error, reported by kind. Server CPU per request (from
   /proc) and the CPU used by other processes on the machine during each window are recorded.
   Beforehand, sequential keep-alive GETs (card) and POSTs (SendMessage) check that no server is
   handicapped by the delayed-ACK stall (~40 ms per response without TCP_NODELAY). A short extra
   run shows the bridge as configured by default (``--max-concurrent 8``) under the same load.
1b. ``--only send-wrk``: the same load from wrk (C, two threads; ``--pin``: servers on CPU 1,
   wrk on CPU 0), against the bridge and the bare server, each with the persona and with an echo,
   and ovos-persona-server. The bare servers run as the a2a-sdk does by default where
   ``opentelemetry-api`` is installed (as here: fastapi and Google's libraries bring it), with a
   span around every handler call; ``bare_sdk_echo_untraced`` runs with those spans off, as the
   bridge does (``OTEL_INSTRUMENTATION_A2A_SDK_ENABLED=false``).
1c. ``--only send-workers``: wrk against ``serve --workers 2``, one bridge process and
   ovos-persona-server, the same persona, nothing pinned (server CPU includes the workers).
2. 500 concurrent open SSE streams on the bridge (``--backend echo --heartbeat 1
   --max-concurrent 1000``, each ``sleep:15``): RSS and threads idle and at peak, time to the
   first event, heartbeat punctuality (gaps between successive heartbeat updates minus
   1 s, by the bridge's own timestamps and by arrival here) and the delay from a heartbeat's
   timestamp to its arrival; /health is probed meanwhile. Bounded: 120 s overall.
3. GetTask / ListTasks latency with 100,000 stored tasks (page size 50: first page, a page half
   way down by cursor, filtered by contextId), one request at a time, alternating between the
   bridge (SQLite file filled before it starts) and a bare SDK server holding the same tasks in
   an InMemoryTaskStore. The file is filled through the a2a-sdk: 300 tasks via
   ``DatabaseTaskStore.save(task, ServerCallContext())`` (timed), the rest as the same
   ``TaskModel`` rows in bulk, because one ``save`` costs ~10 ms of ORM work on a small machine;
   a sample of both is read back with ``DatabaseTaskStore.get`` and compared with the original.

``--quick``: 2 rounds x 3 s, 100 streams of ``sleep:4``, 10,000 tasks (about 90 s).
Internal: ``python bench/bench_bridge.py _bare-server --persona FILE [--prefill N] [--db FILE]``.
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

PY = sys.executable
PERSONA = {"name": "trivial", "handlers": ["ovos-solver-failure-plugin"]}
HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}
COMPLETED = "TASK_STATE_COMPLETED"
TASK_SEED = 20261130


# ---- small helpers -------------------------------------------------------------------

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


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


REPO = Path(__file__).resolve().parent.parent
CODE_ENV: dict[str, str] = {}  # PYTHONPATH of the snapshot the bridge processes run (see snapshot_code)


def sources_digest(root: Path) -> str:
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
    sys.path.insert(0, str(target))  # this process too (the part 3 pre-fill may use the bridge's store)
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


# ---- (b) the bare a2a-sdk server, run as a subprocess of this script ------------------------

def bare_server_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="bench_bridge.py _bare-server")
    parser.add_argument("--persona", required=True)
    parser.add_argument("--prefill", type=int, default=0)
    parser.add_argument("--db", default="", help="SQLite file: DatabaseTaskStore instead of InMemoryTaskStore")
    parser.add_argument("--echo", action="store_true", help="answer 'echo: TEXT' on the event loop, no persona")
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

    class PersonaExecutor(AgentExecutor):
        async def execute(self, context, event_queue) -> None:
            task = context.current_task
            if task is None:
                task = new_task_from_user_message(context.message)
                await event_queue.enqueue_event(task)
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            if args.echo:
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
        print(f"bench-bare: serving at {base}", flush=True)
        await serving

    asyncio.run(run())


# ---- server processes --------------------------------------------------------------------

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
    def card_url(self) -> str:
        return self.base + "/.well-known/agent-card.json"

    env: dict[str, str] = {}  # set for this server only

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
    label = "bridge"

    def __init__(self, workdir: Path, name: str, flags: list[str]) -> None:
        super().__init__(workdir, name)
        self.flags = flags

    def start(self) -> "BridgeProcess":
        t0 = time.monotonic()
        self._spawn([PY, "-m", "ovos_a2a_solver.bridge", "--port", "0", *self.flags])
        self.base = self._wait_line(r'ovos-a2a: serving ".*" at (http://\S+) \(card', 90).group(1)
        self._resolve_card()
        self.startup_s = time.monotonic() - t0
        return self


class BareProcess(ServerProcess):
    label = "bare_sdk"

    def __init__(self, workdir: Path, name: str, persona: Path, prefill: int = 0, db: str = "",
                 echo: bool = False, traced: bool = True) -> None:
        super().__init__(workdir, name)
        self.persona = persona
        self.prefill = prefill
        self.db = db
        self.echo = echo
        if not traced:  # as the bridge runs it: the SDK's OpenTelemetry spans off
            self.env = {"OTEL_INSTRUMENTATION_A2A_SDK_ENABLED": "false"}
        if db:
            self.label = "bare_sdk_sqlite"

    def start(self) -> "BareProcess":
        t0 = time.monotonic()
        self._spawn([PY, str(Path(__file__).resolve()), "_bare-server", "--persona", str(self.persona),
                     "--prefill", str(self.prefill), *(["--db", self.db] if self.db else []),
                     *(["--echo"] if self.echo else [])])
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


# ---- 1. SendMessage throughput --------------------------------------------------------------

def send_body(rid: int, text: str = "hello") -> dict:
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


async def closed_loop(url: str, pid: int, concurrency: int, seconds: float, warmup: float) -> dict:
    """``concurrency`` clients, each sending its next message as soon as the last is answered."""
    import httpx

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    ok_lat: list[float] = []
    errors: Counter = Counter()
    window = {"start": float("inf"), "end": float("inf")}
    stop = asyncio.Event()
    rid = 0

    async with httpx.AsyncClient(timeout=60, limits=limits, headers=HEADERS) as hc:
        async def worker() -> None:
            nonlocal rid
            while not stop.is_set():
                rid += 1
                payload = json.dumps(send_body(rid))
                t0 = time.perf_counter()
                try:
                    response = await hc.post(url, content=payload)
                    kind = classify(response.status_code, response.json())
                except Exception as exc:  # any failure is counted by kind, the loop goes on
                    kind = f"exception {type(exc).__name__}"
                t1 = time.perf_counter()
                if window["start"] <= t0 and t1 <= window["end"]:
                    if kind is None:
                        ok_lat.append(t1 - t0)
                    else:
                        errors[kind] += 1

        workers = [asyncio.create_task(worker()) for _ in range(concurrency)]
        await asyncio.sleep(warmup)
        cpu0, own0, all0 = proc_cpu(pid), time.process_time(), machine_busy()
        window["start"] = time.perf_counter()
        await asyncio.sleep(seconds)
        window["end"] = time.perf_counter()
        cpu1, own1, all1 = proc_cpu(pid), time.process_time(), machine_busy()
        stop.set()
        await asyncio.wait_for(asyncio.gather(*workers, return_exceptions=True), 90)
    elapsed = window["end"] - window["start"]
    ok = len(ok_lat)
    res = {"rps": round(ok / elapsed, 2), "ok": ok, "errors": sum(errors.values()),
           "error_kinds": dict(errors.most_common(5)), "latency": summary(ok_lat),
           "server_cpu_s": round(cpu1 - cpu0, 3), "loadgen_cpu_s": round(own1 - own0, 3),
           "other_cpu_s": round((all1 - all0) - (cpu1 - cpu0) - (own1 - own0), 3),
           "window_s": round(elapsed, 3)}
    res["server_cpu_ms_per_ok"] = round((cpu1 - cpu0) * 1000 / ok, 3) if ok else None
    return res


WRK_SCRIPT = r"""
-- SendMessage with a fresh messageId per request; counts COMPLETED answers per thread.
-- The ids carry RUN, unique per wrk run: Lua's math.random repeats its sequence in every
-- run, and a messageId sent again is a replay for the bridge (no persona turn), not work.
local threads, counter = {}, 0
function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
  table.insert(threads, thread)
end
function init(args) n, ok, bad = 0, 0, 0 end
function request()
  n = n + 1
  local body = '{"jsonrpc":"2.0","id":' .. n .. ',"method":"SendMessage","params":{"message":' ..
    '{"messageId":"wrk-RUN-' .. tid .. '-' .. n ..
    '","role":"ROLE_USER","parts":[{"text":"hello"}]}}}'
  return wrk.format("POST", nil, {["Content-Type"] = "application/json", ["A2A-Version"] = "1.0"}, body)
end
function response(status, headers, body)
  if status == 200 and body:find("TASK_STATE_COMPLETED", 1, true) then ok = ok + 1 else bad = bad + 1 end
end
function done(summary, latency, requests)
  local good, errors = 0, 0
  for _, t in ipairs(threads) do good = good + t:get("ok"); errors = errors + t:get("bad") end
  io.write(string.format('WRK {"ok":%d,"bad":%d,"seconds":%f,"p50_ms":%f,"p99_ms":%f}\n', good, errors,
    summary.duration / 1e6, latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
"""


def wrk_round(url: str, pid: int, connections: int, seconds: float, workdir: Path, pin: bool) -> dict:
    """One round of wrk (C, two threads) against ``url``: completed SendMessages per second.

    With ``pin``, wrk runs on CPU 0 and the server was pinned to CPU 1, so the load generator
    does not compete with the server for its core."""
    script = workdir / "send.lua"
    script.write_text(WRK_SCRIPT.replace("RUN", uuid.uuid4().hex))
    command = ["wrk", "-t2", f"-c{connections}", f"-d{seconds:g}s", "-s", str(script), url]
    if pin:
        command = ["taskset", "-c", "0", *command]
    cpu0 = proc_cpu(pid)
    out = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60).stdout
    cpu1 = proc_cpu(pid)
    line = next((l for l in out.splitlines() if l.startswith("WRK ")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no result: {out[-500:]}")
    data = json.loads(line[4:])
    data["rps"] = round(data["ok"] / data["seconds"], 2)
    data["server_cpu_ms_per_ok"] = round((cpu1 - cpu0) * 1000 / data["ok"], 3) if data["ok"] else None
    return data


def wrk_rounds(args, workdir: Path, servers: list, pin: bool, ratios: list[tuple[str, str]]) -> dict:
    """Start ``servers``, then ``args.rounds`` rounds of :func:`wrk_round` against each, the
    order alternating; their rounds, medians and the median ratios ``(a, b)`` of req/s."""
    result: dict = {"load": "wrk", "connections": args.concurrency, "seconds": args.seconds, "rounds": args.rounds,
                    "pinned": pin, "servers": {}}
    try:
        with ThreadPoolExecutor(len(servers)) as pool:
            for future in [pool.submit(s.start) for s in servers]:
                future.result()
        if pin:
            for s in servers:
                subprocess.run(["taskset", "-a", "-p", "-c", "1", str(s.pid)], capture_output=True, check=True)
        for r in range(args.rounds):
            for s in (servers if r % 2 == 0 else servers[::-1]):
                res = wrk_round(s.rpc_url, s.pid, args.concurrency, args.seconds, workdir, pin)
                result["servers"].setdefault(s.name, {"rounds": []})["rounds"].append(res)
                print(f"  round {r} {s.name:17s} {res['rps']:8.1f} req/s  p50 {res['p50_ms']:7.2f}  "
                      f"p99 {res['p99_ms']:7.2f} ms  errors {res['bad']}  server CPU "
                      f"{res['server_cpu_ms_per_ok'] or 0:.2f} ms/req", flush=True)
    finally:
        for s in servers:
            s.stop()
    for entry in result["servers"].values():
        entry["median_rps"] = statistics.median(x["rps"] for x in entry["rounds"])
        entry["median_p99_ms"] = statistics.median(x["p99_ms"] for x in entry["rounds"])
    rps = {k: v["median_rps"] for k, v in result["servers"].items()}
    result["ratios"] = {f"{a}/{b}": round(rps[a] / rps[b], 3) for a, b in ratios}
    print(f"  ratios {result['ratios']}", flush=True)
    return result


def bench_send_wrk(args, workdir: Path, persona: Path) -> dict:
    """SendMessage throughput with wrk as the load (see ``wrk_round``), servers side by side."""
    print(f"\n== 1b. SendMessage throughput with wrk: {args.concurrency} connections, {args.rounds} rounds x "
          f"{args.seconds:g} s{', server on CPU 1, wrk on CPU 0' if args.pin else ''}", flush=True)
    servers = [
        BridgeProcess(workdir, "bridge", ["--persona", str(persona), "--state-dir", str(workdir / "state-wrk"),
                                          "--max-concurrent", str(max(args.concurrency, 8))]),
        BridgeProcess(workdir, "bridge_echo", ["--backend", "echo", "--state-dir", str(workdir / "state-wrk-echo"),
                                               "--max-concurrent", str(max(args.concurrency, 8))]),
        BareProcess(workdir, "bare_sdk", persona),
        BareProcess(workdir, "bare_sdk_echo", persona, echo=True),
        BareProcess(workdir, "bare_sdk_echo_untraced", persona, echo=True, traced=False),
        PersonaServerProc(workdir, "persona_server", persona),
    ]
    return wrk_rounds(args, workdir, servers, args.pin, [("bridge", "persona_server"), ("bridge", "bare_sdk"),
                                                          ("bridge_echo", "bare_sdk_echo"),
                                                          ("bridge_echo", "bare_sdk_echo_untraced")])


def bench_send_workers(args, workdir: Path, persona: Path) -> dict:
    """``serve --workers 2`` beside one bridge process and ovos-persona-server, the same
    persona, wrk as the load. Nothing is pinned: each server may use both cores (the
    persona server, one process, uses one), and wrk shares them with it."""
    print(f"\n== 1c. SendMessage throughput of 2 workers, with wrk: {args.concurrency} connections, "
          f"{args.rounds} rounds x {args.seconds:g} s, nothing pinned", flush=True)
    limit = ["--max-concurrent", str(max(args.concurrency, 8))]
    servers = [
        BridgeProcess(workdir, "bridge_2_workers", ["--persona", str(persona), "--workers", "2", *limit,
                                                    "--state-dir", str(workdir / "state-workers")]),
        BridgeProcess(workdir, "bridge", ["--persona", str(persona), *limit,
                                          "--state-dir", str(workdir / "state-one")]),
        PersonaServerProc(workdir, "persona_server", persona),
    ]
    return wrk_rounds(args, workdir, servers, False, [("bridge_2_workers", "persona_server"),
                                                      ("bridge_2_workers", "bridge"), ("bridge", "persona_server")])


async def keepalive_get(url: str, n: int) -> dict:
    """Sequential GETs on one keep-alive connection: a few ms unless delayed ACKs stall them."""
    import httpx
    lat = []
    async with httpx.AsyncClient(timeout=10, limits=httpx.Limits(max_connections=1)) as hc:
        for i in range(n + 10):
            t0 = time.perf_counter()
            r = await hc.get(url)
            r.raise_for_status()
            if i >= 10:
                lat.append(time.perf_counter() - t0)
    out = summary(lat)
    out["stalled"] = out["p50_ms"] > 20  # ~40 ms per request is the no-TCP_NODELAY signature
    return out


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


def bench_send(args, workdir: Path, persona: Path) -> dict:
    print(f"\n== 1. SendMessage throughput: {args.concurrency} clients, {args.rounds} rounds x {args.seconds:g} s",
          flush=True)
    servers = [
        BridgeProcess(workdir, "bridge", ["--persona", str(persona), "--state-dir", str(workdir / "state-send"),
                                          "--max-concurrent", str(max(args.concurrency, 8))]),
        BareProcess(workdir, "bare_sdk", persona),
        PersonaServerProc(workdir, "persona_server", persona),
        # diagnostic: the bare server on the bridge's store (DatabaseTaskStore on SQLite, same pragmas)
        BareProcess(workdir, "bare_sdk_sqlite", persona, db=str(workdir / "bare-sqlite" / "tasks.sqlite3")),
    ]
    (workdir / "bare-sqlite").mkdir(exist_ok=True)
    result: dict = {"concurrency": args.concurrency, "seconds": args.seconds, "rounds": args.rounds,
                    "bridge_flags": servers[0].flags, "servers": {}}
    try:
        with ThreadPoolExecutor(len(servers)) as pool:  # started side by side; each is stopped in finally
            for future in [pool.submit(s.start) for s in servers]:
                future.result()
        for s in servers:
            print(f"  started {s.label:15s} pid {s.pid} in {s.startup_s:5.1f} s  {s.rpc_url}", flush=True)
        for s in servers:
            entry = result["servers"][s.label] = {"rpc_url": s.rpc_url, "startup_s": round(s.startup_s, 2)}
            entry["keepalive_get_card"] = asyncio.run(keepalive_get(s.card_url, 100 if args.quick else 300))
            entry["sequential_send"] = asyncio.run(keepalive_post(s.rpc_url, 30 if args.quick else 100))
            entry["rss_kib_idle"] = proc_status(s.pid).get("VmRSS")
            flag = "  <-- STALLED (no TCP_NODELAY?)" if entry["keepalive_get_card"]["stalled"] else ""
            print(f"  {s.label:15s} keep-alive GET card p50 {entry['keepalive_get_card']['p50_ms']:6.2f} ms, "
                  f"sequential SendMessage p50 {entry['sequential_send']['p50_ms']:6.2f} ms{flag}", flush=True)
            entry["rounds"] = []
        for r in range(args.rounds):
            order = servers if r % 2 == 0 else servers[::-1]
            for s in order:
                res = asyncio.run(closed_loop(s.rpc_url, s.pid, args.concurrency, args.seconds, args.warmup))
                res["round"] = r
                result["servers"][s.label]["rounds"].append(res)
                print(f"  round {r} {s.label:15s} {res['rps']:8.1f} req/s  p50 {res['latency'].get('p50_ms', 0):7.2f}"
                      f"  p99 {res['latency'].get('p99_ms', 0):7.2f} ms  errors {res['errors']}"
                      f"  server CPU {res['server_cpu_ms_per_ok'] or 0:.2f} ms/req"
                      f"  (other load {res['other_cpu_s']:.1f} CPU s)", flush=True)
        for s in servers:
            entry = result["servers"][s.label]
            rounds = entry["rounds"]
            entry["median"] = {
                "rps": statistics.median(x["rps"] for x in rounds),
                "p50_ms": statistics.median(x["latency"].get("p50_ms", float("nan")) for x in rounds),
                "p99_ms": statistics.median(x["latency"].get("p99_ms", float("nan")) for x in rounds),
                "errors_total": sum(x["errors"] for x in rounds),
                "server_cpu_ms_per_ok": statistics.median((x["server_cpu_ms_per_ok"] or float("nan"))
                                                          for x in rounds),
            }
            entry["rss_kib_after"] = proc_status(s.pid).get("VmRSS")
            entry["log"] = s.log_findings()
    finally:
        for s in servers:
            s.stop()
    med = {k: v["median"] for k, v in result["servers"].items()}
    result["ratio_bridge_over_persona_server"] = round(med["bridge"]["rps"] / med["persona_server"]["rps"], 3)
    result["ratio_bridge_over_bare_sdk"] = round(med["bridge"]["rps"] / med["bare_sdk"]["rps"], 3)
    result["ratio_bridge_over_bare_sdk_sqlite"] = round(med["bridge"]["rps"] / med["bare_sdk_sqlite"]["rps"], 3)
    result["targets"] = {"bridge/persona_server >= 1.5": result["ratio_bridge_over_persona_server"] >= 1.5,
                         "bridge/bare_sdk >= 0.8": result["ratio_bridge_over_bare_sdk"] >= 0.8}

    # the same load on the bridge as configured by default (--max-concurrent 8)
    if args.quick:
        return result
    with BridgeProcess(workdir, "bridge_defaults", ["--persona", str(persona), "--state-dir",
                                                    str(workdir / "state-defaults")]) as s:
        seconds = min(args.seconds, 3.0)
        res = asyncio.run(closed_loop(s.rpc_url, s.pid, args.concurrency, seconds, args.warmup))
        res["log"] = s.log_findings()
    result["bridge_default_max_concurrent"] = res
    print(f"  bridge, default --max-concurrent 8: {res['rps']:.1f} completed/s, {res['errors']} errors "
          f"{res['error_kinds']}", flush=True)
    return result


# ---- 2. many open streams --------------------------------------------------------------------

def _iso(ts: str) -> float:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


async def one_stream(hc, url: str, i: int, text: str) -> dict:
    body = {"jsonrpc": "2.0", "id": i, "method": "SendStreamingMessage",
            "params": {"message": {"role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": [{"text": text}]}}}
    t0 = time.perf_counter()
    events: list[tuple[float, float, dict]] = []
    out = {"error": None, "events": events, "t0": t0}
    try:
        async with hc.stream("POST", url, content=json.dumps(body),
                             headers={"Accept": "text/event-stream"}) as response:
            if response.status_code != 200:
                out["error"] = f"http {response.status_code}"
                return out
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    events.append((time.perf_counter(), time.time(), json.loads(line[5:])))
    except Exception as exc:  # counted and reported
        out["error"] = f"exception {type(exc).__name__}: {exc}"[:120]
    out["t_end"] = time.perf_counter()
    return out


def analyse_stream(s: dict, heartbeat: float) -> dict:
    """Heartbeat gaps (server timestamps and arrival times), first event delay, final state."""
    a = {"error": s["error"], "final": None, "first_event_s": None, "duration_s": None,
         "gaps_server": [], "gaps_arrival": [], "heartbeats": 0, "first_hb_late_s": None, "labels": [],
         "hb_delivery_lag": []}
    if s["events"]:
        a["first_event_s"] = s["events"][0][0] - s["t0"]
        a["duration_s"] = s["events"][-1][0] - s["t0"]
    prev = None  # the previous event, if it was a heartbeat: (arrival, server ts)
    accepted_ts = None
    for arrival, wall, ev in s["events"]:
        if "error" in ev:
            a["error"] = a["error"] or f"rpc {ev['error'].get('code')}: {ev['error'].get('message')}"[:120]
            continue
        result = ev.get("result", {})
        update = result.get("statusUpdate")
        task = result.get("task")
        status = (update or task or {}).get("status", {})
        if status.get("state"):
            a["final"] = status["state"]
        text = " ".join(p.get("text", "") for p in status.get("message", {}).get("parts", []))
        if update and "heartbeat" in (update.get("metadata") or {}):
            ts = _iso(status["timestamp"])
            a["heartbeats"] += 1
            a["hb_delivery_lag"].append(wall - ts)  # stamped by the bridge -> arrived here
            a["labels"].append(update["metadata"].get("note", ""))
            if prev is not None:
                a["gaps_arrival"].append(arrival - prev[0] - heartbeat)
                a["gaps_server"].append(ts - prev[1] - heartbeat)
            elif accepted_ts is not None:
                a["first_hb_late_s"] = ts - accepted_ts - heartbeat
            prev = (arrival, ts)
        else:
            if update and text.startswith("Message accepted") and status.get("timestamp"):
                accepted_ts = _iso(status["timestamp"])
            prev = None
    return a


async def sample_process(pid: int, stop: asyncio.Event, samples: list, period: float = 0.2) -> None:
    while not stop.is_set():
        st = proc_status(pid)
        st["t"] = time.perf_counter()
        samples.append(st)
        try:
            await asyncio.wait_for(stop.wait(), period)
        except asyncio.TimeoutError:
            pass


async def probe_health(url: str, stop: asyncio.Event, lat: list, running: list, period: float = 0.25) -> None:
    """The bridge's /health (a SQLite SELECT 1) while the streams are open: event-loop lag, and
    how many persona turns it says are running."""
    import httpx
    async with httpx.AsyncClient(timeout=30) as hc:
        while not stop.is_set():
            t0 = time.perf_counter()
            try:
                response = await hc.get(url)
                response.raise_for_status()
                lat.append(time.perf_counter() - t0)
                running.append(response.json().get("running", 0))
            except Exception:  # a failed probe is recorded as a very late one
                lat.append(30.0)
            try:
                await asyncio.wait_for(stop.wait(), period)
            except asyncio.TimeoutError:
                pass


async def run_streams(server: ServerProcess, n: int, text: str, heartbeat: float, timeout: float) -> dict:
    import httpx

    limits = httpx.Limits(max_connections=n + 16, max_keepalive_connections=n + 16)
    timeouts = httpx.Timeout(connect=60, read=60, write=60, pool=60)
    samples: list = []
    health: list = []
    running: list = []
    stop = asyncio.Event()
    sampler = asyncio.create_task(sample_process(server.pid, stop, samples))
    health_url = server.base.rsplit("/a2a", 1)[0] + "/health"
    prober = asyncio.create_task(probe_health(health_url, stop, health, running))
    cpu0 = proc_cpu(server.pid)
    t0 = time.perf_counter()
    async with httpx.AsyncClient(timeout=timeouts, limits=limits, headers=HEADERS) as hc:
        jobs = [asyncio.create_task(one_stream(hc, server.rpc_url, i, text)) for i in range(n)]
        done, pending = await asyncio.wait(jobs, timeout=timeout)
        for job in pending:
            job.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
    wall = time.perf_counter() - t0
    cpu = proc_cpu(server.pid) - cpu0
    stop.set()
    await asyncio.gather(sampler, prober)
    streams = [j.result() for j in done]
    return {"streams": streams, "timed_out": len(pending), "samples": samples, "health": health,
            "running_max": max(running, default=0), "wall_s": wall, "server_cpu_s": cpu}


def bench_streams(args, workdir: Path) -> dict:
    n, text, hb = args.streams, args.stream_text, 1.0
    print(f"\n== 2. {n} concurrent open streams on the bridge (echo backend, heartbeat 1 s, {text!r})", flush=True)
    flags = ["--backend", "echo", "--heartbeat", "1", "--max-concurrent", "1000",
             "--state-dir", str(workdir / "state-streams")]
    with BridgeProcess(workdir, "bridge_streams", flags) as s:
        asyncio.run(keepalive_post(s.rpc_url, 20))  # warm: imports, SQLite, first turns
        time.sleep(0.5)
        idle = proc_status(s.pid)
        raw = asyncio.run(run_streams(s, n, text, hb, args.stream_timeout))
        after = proc_status(s.pid)
        log = s.log_findings()
    analysed = [analyse_stream(x, hb) for x in raw["streams"]]
    finals = Counter(a["final"] for a in analysed)
    errors = Counter(a["error"] for a in analysed if a["error"])
    gaps_server = [g for a in analysed for g in a["gaps_server"]]
    gaps_arrival = [g for a in analysed for g in a["gaps_arrival"]]
    lag = [g for a in analysed for g in a["hb_delivery_lag"]]
    first_late = [a["first_hb_late_s"] for a in analysed if a["first_hb_late_s"] is not None]
    first_event = [a["first_event_s"] for a in analysed if a["first_event_s"] is not None]
    durations = [a["duration_s"] for a in analysed if a["duration_s"] is not None]
    peak_rss = max((x.get("VmRSS", 0) for x in raw["samples"]), default=0)
    peak_threads = max((x.get("Threads", 0) for x in raw["samples"]), default=0)
    open_count = sum(1 for a in analysed if a["final"] == COMPLETED)
    # streams open at once: between a stream's first event and its end, as the client saw them
    edges = sorted([(x["events"][0][0], 1) for x in raw["streams"] if x["events"]] +
                   [(x.get("t_end", float("inf")), -1) for x in raw["streams"] if x["events"]])
    level = peak_open = 0
    for _t, step in edges:
        level += step
        peak_open = max(peak_open, level)

    def dist(values: list[float]) -> dict:
        v = sorted(values)
        return {"n": len(v), "p50_ms": round(pct(v, 50) * 1000, 2), "p99_ms": round(pct(v, 99) * 1000, 2),
                "max_ms": round(v[-1] * 1000, 2) if v else None, "min_ms": round(v[0] * 1000, 2) if v else None}

    result = {
        "streams": n, "text": text, "heartbeat_s": hb, "bridge_flags": flags,
        "completed": open_count, "peak_open_at_once": peak_open, "bridge_running_turns_max": raw["running_max"],
        "final_states": dict(finals), "errors": dict(errors.most_common(5)),
        "timed_out": raw["timed_out"], "wall_s": round(raw["wall_s"], 2),
        "rss_kib": {"idle": idle.get("VmRSS"), "peak_sampled": peak_rss, "hwm": after.get("VmHWM"),
                    "after": after.get("VmRSS")},
        "rss_kib_per_stream": round((peak_rss - (idle.get("VmRSS") or 0)) / n, 1) if n else None,
        "threads": {"idle": idle.get("Threads"), "peak": peak_threads, "after": after.get("Threads")},
        "server_cpu_s": round(raw["server_cpu_s"], 2),
        "first_event": dist(first_event),
        "all_open_after_s": round(max(first_event), 3) if first_event else None,
        "stream_duration": dist(durations),
        "heartbeats_per_stream": dict(Counter(a["heartbeats"] for a in analysed).most_common(6)),
        "heartbeat_gap_minus_1s_server_ts": dist(gaps_server),
        "heartbeat_gap_minus_1s_arrival": dist(gaps_arrival),
        "first_heartbeat_late_server_ts": dist(first_late),
        "heartbeat_delivery_lag": dist(lag),
        "health_probe_during": summary(raw["health"]),
        "log": log,
    }
    hg = result["heartbeat_gap_minus_1s_server_ts"]
    print(f"  completed {open_count}/{n}, errors {dict(errors)}, timed out {raw['timed_out']}, "
          f"wall {raw['wall_s']:.1f} s, open at once: {peak_open} (bridge's /health running max "
          f"{raw['running_max']})", flush=True)
    print(f"  RSS idle {(idle.get('VmRSS') or 0) / 1024:.1f} MiB, peak {peak_rss / 1024:.1f} MiB "
          f"({result['rss_kib_per_stream']} KiB/stream), threads peak {peak_threads}", flush=True)
    ha = result["heartbeat_gap_minus_1s_arrival"]
    print(f"  first event p50 {result['first_event']['p50_ms']} ms p99 {result['first_event']['p99_ms']} ms; "
          f"heartbeat gap - 1 s: by server timestamp p50 {hg['p50_ms']} p99 {hg['p99_ms']} ms, by arrival p50 "
          f"{ha['p50_ms']} p99 {ha['p99_ms']} ms; stamped->arrived p50 {result['heartbeat_delivery_lag']['p50_ms']}"
          f" ms", flush=True)
    return result


# ---- 3. GetTask / ListTasks with 100k stored tasks -----------------------------------------

async def prefill_bridge_store(db_file: Path, tasks: list, via_save: int) -> dict:
    """Write ``tasks`` where the bridge will read them.

    If the measured bridge code opens its SQLite store itself (``bridge.app.open_stores``, the
    bridge's own ``TaskStore``), every task goes through that store's ``save(task,
    ServerCallContext())``. Otherwise the bridge uses the a2a-sdk ``DatabaseTaskStore``, and
    :func:`prefill_sqlite` fills its table.
    """
    try:
        from ovos_a2a_solver.bridge import app as bridge_app  # the snapshot (first on sys.path)
    except ImportError:
        bridge_app = None
    if bridge_app is None or not hasattr(bridge_app, "open_stores"):
        out = await prefill_sqlite(db_file, tasks, via_save)
        out["store"] = "a2a-sdk DatabaseTaskStore"
        return out
    from a2a.server.context import ServerCallContext

    opened = bridge_app.open_stores(f"sqlite+aiosqlite:///{db_file}")
    db, store = opened[0], opened[1]  # (earlier versions returned a third value: the same store)
    to_initialize = store
    await to_initialize.initialize()
    context = ServerCallContext()
    t0 = time.perf_counter()
    for start in range(0, len(tasks), 500):  # 500 saves in flight at a time
        await asyncio.gather(*(store.save(t, context) for t in tasks[start:start + 500]))
    save_s = time.perf_counter() - t0
    rng = random.Random(7)
    sample = rng.sample(tasks, min(len(tasks), 500))
    mismatches = 0
    for t in sample:
        mismatches += await store.get(t.id, context) != t
    await db.aclose()
    return {"store": f"bridge's own {type(store).__name__}", "rows": len(tasks), "via_save": len(tasks),
            "save_ms_each": round(save_s * 1000 / max(len(tasks), 1), 3), "bulk_rows": 0, "bulk_s": 0.0,
            "readback_checked": len(sample), "readback_mismatches": mismatches,
            "save_all_estimate_s": round(save_s, 1)}


async def prefill_sqlite(db_file: Path, tasks: list, via_save: int) -> dict:
    """Write ``tasks`` into the a2a-sdk ``tasks`` table of ``db_file``.

    The first ``via_save`` go through ``DatabaseTaskStore.save(task, ServerCallContext())``
    (timed); the rest are inserted in bulk as the same ``TaskModel`` rows ``save`` writes (one
    ``save`` costs ~3 ms of SQLAlchemy ORM work here, ~5 min for 100k). A sample of both kinds is
    read back through ``DatabaseTaskStore.get`` and compared with the original task.
    """
    from a2a.server.context import ServerCallContext
    from a2a.server.models import TaskModel
    from a2a.server.owner_resolver import resolve_user_scope
    from a2a.server.tasks import DatabaseTaskStore
    from google.protobuf.json_format import MessageToDict
    from sqlalchemy import func, insert, select
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(f"sqlite+aiosqlite:///{db_file}")
    store = DatabaseTaskStore(engine)
    await store.initialize()
    context = ServerCallContext()
    owner = resolve_user_scope(context)
    t0 = time.perf_counter()
    for task in tasks[:via_save]:
        await store.save(task, context)
    save_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    rest = tasks[via_save:]
    for start in range(0, len(rest), 5000):
        rows = [dict(id=t.id, context_id=t.context_id, kind="task", owner=owner,
                     last_updated=t.status.timestamp.ToDatetime(), status=MessageToDict(t.status),
                     artifacts=[MessageToDict(a) for a in t.artifacts],
                     history=[MessageToDict(m) for m in t.history], task_metadata=None, protocol_version="1.0")
                for t in rest[start:start + 5000]]
        async with engine.begin() as conn:
            await conn.execute(insert(TaskModel), rows)
    bulk_s = time.perf_counter() - t1
    rng = random.Random(7)
    sample = tasks[:min(via_save, 100)] + rng.sample(rest, min(len(rest), 400))
    mismatches = 0
    for t in sample:
        mismatches += await store.get(t.id, context) != t
    async with engine.connect() as conn:
        count = (await conn.execute(select(func.count()).select_from(TaskModel))).scalar_one()
    await engine.dispose()
    return {"rows": count, "via_save": via_save, "save_ms_each": round(save_s * 1000 / max(via_save, 1), 3),
            "bulk_rows": len(rest), "bulk_s": round(bulk_s, 2), "readback_checked": len(sample),
            "readback_mismatches": mismatches,
            "save_all_estimate_s": round(save_s / max(via_save, 1) * len(tasks), 1)}


def rpc(method: str, params: dict, rid: int = 1) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})


async def query_latency(servers: list[ServerProcess], tasks: list, budget_s: float, max_n: int) -> dict:
    """GetTask and ListTasks, one request at a time, alternating between the servers."""
    import httpx
    from a2a.utils.task import ListTasksCursor, encode_list_tasks_cursor

    order = sorted(tasks, key=lambda t: (t.status.timestamp.ToNanoseconds(), t.id), reverse=True)
    deep = len(order) // 2
    cursor = encode_list_tasks_cursor(ListTasksCursor(timestamp_ns=order[deep - 1].status.timestamp.ToNanoseconds(),
                                                      task_id=order[deep - 1].id))
    contexts = sorted({t.context_id for t in tasks})
    per_context = Counter(t.context_id for t in tasks)
    rng = random.Random(11)

    def make(kind: str):
        if kind == "GetTask":
            t = tasks[rng.randrange(len(tasks))]
            return rpc("GetTask", {"id": t.id}), ("id", t.id)
        if kind == "ListTasks first page":
            return rpc("ListTasks", {"pageSize": 50}), ("first", order[0].id)
        if kind == f"ListTasks page at {deep} (cursor)":
            return rpc("ListTasks", {"pageSize": 50, "pageToken": cursor}), ("first", order[deep].id)
        c = contexts[rng.randrange(len(contexts))]
        return rpc("ListTasks", {"pageSize": 50, "contextId": c}), ("count", per_context[c])

    def check(data: dict, expect) -> str | None:
        if "error" in data:
            return f"rpc {data['error'].get('code')}: {data['error'].get('message')}"[:80]
        res = data.get("result", {})
        what, value = expect
        if what == "id":
            return None if res.get("id") == value else "wrong task"
        found = res.get("tasks", [])
        if what == "first":
            if len(found) != 50 or found[0].get("id") != value:
                return "wrong page"
            return None if int(res.get("totalSize", 0)) == len(tasks) else f"totalSize {res.get('totalSize')}"
        return None if len(found) == value else f"{len(found)} tasks in context, expected {value}"

    kinds = ["GetTask", "ListTasks first page", f"ListTasks page at {deep} (cursor)", "ListTasks by contextId"]
    out: dict = {s.label: {} for s in servers}
    async with httpx.AsyncClient(timeout=60, headers=HEADERS) as hc:
        for kind in kinds:
            lat = {s.label: [] for s in servers}
            errs = {s.label: Counter() for s in servers}
            for _ in range(2):  # warm
                for s in servers:
                    body, _expect = make(kind)
                    await hc.post(s.rpc_url, content=body)
            cpu0 = {s.label: proc_cpu(s.pid) for s in servers}
            deadline = time.perf_counter() + budget_s
            i = 0
            min_n = 20 if kind == "GetTask" else 10  # a full-table ListTasks takes ~1 s here
            while i < max_n and (time.perf_counter() < deadline or i < min_n):
                body, expect = make(kind)
                for s in (servers if i % 2 == 0 else servers[::-1]):
                    t0 = time.perf_counter()
                    r = await hc.post(s.rpc_url, content=body)
                    dt = time.perf_counter() - t0
                    problem = f"http {r.status_code}" if r.status_code != 200 else check(r.json(), expect)
                    if problem:
                        errs[s.label][problem] += 1
                    else:
                        lat[s.label].append(dt)
                i += 1
            for s in servers:
                entry = summary(lat[s.label])
                entry["errors"] = dict(errs[s.label])
                entry["server_cpu_ms_each"] = round((proc_cpu(s.pid) - cpu0[s.label]) * 1000 / i, 3)
                out[s.label][kind] = entry
            print("  " + f"{kind:32s}" + "  ".join(
                f"{s.label} p50 {out[s.label][kind].get('p50_ms', float('nan')):8.2f} p99 "
                f"{out[s.label][kind].get('p99_ms', float('nan')):8.2f} ms" + (
                    f" ERR {dict(errs[s.label])}" if errs[s.label] else "") for s in servers), flush=True)
    return out


def preflight(server: ServerProcess, task_id: str) -> str:
    """"ok" if ``server`` answers GetTask for a pre-filled task, else what went wrong."""
    import httpx
    try:
        data = httpx.post(server.rpc_url, content=rpc("GetTask", {"id": task_id}), headers=HEADERS, timeout=30).json()
    except (httpx.HTTPError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    if "error" in data:
        return f"rpc {data['error'].get('code')}: {data['error'].get('message')}"
    return "ok" if data.get("result", {}).get("id") == task_id else "wrong task"


def bench_store(args, workdir: Path, persona: Path) -> dict:
    n = args.tasks
    print(f"\n== 3. GetTask / ListTasks with {n} stored tasks", flush=True)
    t0 = time.perf_counter()
    tasks = make_tasks(n)
    gen_s = time.perf_counter() - t0
    state = workdir / "state-store"
    state.mkdir(parents=True, exist_ok=True)
    bridge = BridgeProcess(workdir, "bridge_store", ["--persona", str(persona), "--state-dir", str(state)])
    bare = BareProcess(workdir, "bare_store", persona, prefill=n)
    pool = ThreadPoolExecutor(1)
    bare_started = pool.submit(bare.start)  # fills its InMemoryTaskStore while the SQLite file is written
    try:
        fill = asyncio.run(prefill_bridge_store(state / "bridge.sqlite3", tasks, min(args.via_save, n)))
        fill["generate_s"] = round(gen_s, 2)
        print(f"  SQLite pre-fill ({fill['store']}): {fill['rows']} rows ({fill['via_save']} via save() at "
              f"{fill['save_ms_each']} "
              f"ms each, {fill['bulk_rows']} in bulk in {fill['bulk_s']} s), read-back mismatches "
              f"{fill['readback_mismatches']}/{fill['readback_checked']}", flush=True)
        result = {"tasks": n, "prefill": fill,
                  "db_file_mib": round((state / "bridge.sqlite3").stat().st_size / 2 ** 20, 1)}
        bridge.start()
        bare_started.result()
        for s in (bridge, bare):
            print(f"  started {s.label:10s} pid {s.pid} in {s.startup_s:5.1f} s, RSS "
                  f"{proc_status(s.pid).get('VmRSS', 0) / 1024:.0f} MiB", flush=True)
        result["preflight"] = preflight(bridge, tasks[0].id)
        if result["preflight"] != "ok":
            print(f"  WARNING: the bridge does not serve the pre-filled tasks ({result['preflight']}): has its "
                  f"store's schema changed? Its latencies below are of errors.", flush=True)
        result["startup_s"] = {s.label: round(s.startup_s, 2) for s in (bridge, bare)}
        result["rss_kib"] = {s.label: proc_status(s.pid).get("VmRSS") for s in (bridge, bare)}
        result["latency"] = asyncio.run(query_latency([bridge, bare], tasks, args.query_budget, args.query_max))
        result["log"] = {s.label: s.log_findings() for s in (bridge, bare)}
    finally:
        bridge.stop()
        pool.shutdown(wait=True)  # the bare server's start has returned (or failed): its process is known
        bare.stop()
    return result


# ---- report ---------------------------------------------------------------------------

def print_table(results: dict) -> None:
    print("\n" + "=" * 86)
    send = results.get("send")
    if send:
        print(f"SendMessage, {send['concurrency']} clients, median of {send['rounds']} rounds x {send['seconds']:g} s")
        print(f"  {'server':16s}{'req/s':>9s}{'p50 ms':>9s}{'p99 ms':>9s}{'errors':>8s}{'CPU ms/req':>12s}"
              f"{'GET p50':>9s}{'seq p50':>9s}")
        for label, e in send["servers"].items():
            m = e["median"]
            print(f"  {label:16s}{m['rps']:9.1f}{m['p50_ms']:9.2f}{m['p99_ms']:9.2f}{m['errors_total']:8d}"
                  f"{m['server_cpu_ms_per_ok']:12.2f}{e['keepalive_get_card']['p50_ms']:9.2f}"
                  f"{e['sequential_send']['p50_ms']:9.2f}")
        print(f"  bridge / persona-server = {send['ratio_bridge_over_persona_server']:.2f} (target >= 1.5)   "
              f"bridge / bare SDK = {send['ratio_bridge_over_bare_sdk']:.2f} (target >= 0.8)   "
              f"bridge / bare SDK on SQLite = {send['ratio_bridge_over_bare_sdk_sqlite']:.2f}")
        d = send.get("bridge_default_max_concurrent")
        if d:
            print(f"  bridge with default --max-concurrent 8: {d['rps']:.1f} completed/s, errors {d['errors']} "
                  f"{d['error_kinds']}")
    st = results.get("streams")
    if st:
        print(f"{st['streams']} open streams ({st['text']!r}, heartbeat {st['heartbeat_s']:g} s): completed "
              f"{st['completed']}, errors {sum(st['errors'].values())}, timed out {st['timed_out']}, "
              f"open at once {st['peak_open_at_once']}, wall {st['wall_s']} s")
        print(f"  RSS idle {st['rss_kib']['idle'] / 1024:.1f} MiB -> peak {st['rss_kib']['peak_sampled'] / 1024:.1f} "
              f"MiB ({st['rss_kib_per_stream']} KiB/stream); threads {st['threads']['idle']} -> "
              f"{st['threads']['peak']}")
        for key, name in (("first_event", "first event"), ("heartbeat_gap_minus_1s_server_ts", "hb gap-1s (server)"),
                          ("heartbeat_gap_minus_1s_arrival", "hb gap-1s (arrival)"),
                          ("first_heartbeat_late_server_ts", "1st hb late (server)"),
                          ("heartbeat_delivery_lag", "hb stamped->arrived"), ("stream_duration", "stream duration")):
            v = st[key]
            print(f"  {name:22s} p50 {v['p50_ms']:9.2f}  p99 {v['p99_ms']:9.2f}  max {v['max_ms'] or 0:9.2f} ms")
        h = st["health_probe_during"]
        print(f"  /health during streams p50 {h.get('p50_ms', 0):.2f} p99 {h.get('p99_ms', 0):.2f} ms")
    store = results.get("store")
    if store and "latency" in store:
        print(f"{store['tasks']} stored tasks (bridge: SQLite {store['db_file_mib']} MiB; bare: InMemoryTaskStore)")
        labels = list(store["latency"])
        kinds = list(store["latency"][labels[0]])
        print(f"  {'query':34s}" + "".join(f"{lab + ' p50':>16s}{'p99':>9s}" for lab in labels) + f"{'ratio p50':>11s}")
        for kind in kinds:
            row = [store["latency"][lab][kind] for lab in labels]
            ratio = row[0].get("p50_ms", float("nan")) / row[1].get("p50_ms", float("nan"))
            print(f"  {kind:34s}" + "".join(f"{e.get('p50_ms', float('nan')):16.2f}{e.get('p99_ms', float('nan')):9.2f}"
                                             for e in row) + f"{ratio:11.2f}")
    print("=" * 86)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_bare-server":
        bare_server_main(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=None, help="measured seconds per round (10; quick 3)")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=None, help="rounds per server (3; quick 2)")
    parser.add_argument("--streams", type=int, default=None, help="open streams (500; quick 100)")
    parser.add_argument("--tasks", type=int, default=None, help="stored tasks for part 3 (100000; quick 10000)")
    parser.add_argument("--json", default="")
    parser.add_argument("--quick", action="store_true", help="shorter rounds and streams (under ~90 s)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (server logs)")
    parser.add_argument("--only", choices=["send", "send-wrk", "send-workers", "streams", "store"], action="append",
                        help="run only these parts (repeatable); send-wrk: the load from wrk instead of Python; "
                             "send-workers: 2 workers beside one process and ovos-persona-server, with wrk")
    parser.add_argument("--pin", action="store_true",
                        help="send-wrk: each server on CPU 1, wrk on CPU 0 (needs taskset)")
    args = parser.parse_args()
    args.seconds = args.seconds if args.seconds is not None else (3.0 if args.quick else 10.0)
    args.rounds = args.rounds if args.rounds is not None else (2 if args.quick else 3)
    args.warmup = 1.0
    args.streams = args.streams if args.streams is not None else (100 if args.quick else 500)
    args.stream_text = "sleep:4" if args.quick else "sleep:15"
    args.stream_timeout = 120.0
    args.tasks = args.tasks if args.tasks is not None else (10_000 if args.quick else 100_000)
    args.via_save = 300
    args.query_budget = 2.0 if args.quick else 4.0
    args.query_max = 300 if args.quick else 2000
    parts = args.only or ["send", "streams", "store"]

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
        for part, run in (("send", lambda: bench_send(args, workdir, persona)),
                          ("send-wrk", lambda: bench_send_wrk(args, workdir, persona)),
                          ("send-workers", lambda: bench_send_workers(args, workdir, persona)),
                          ("streams", lambda: bench_streams(args, workdir)),
                          ("store", lambda: bench_store(args, workdir, persona))):
            if part in parts:
                t0 = time.perf_counter()
                results[part] = run()
                results["meta"]["part_s"][part] = round(time.perf_counter() - t0, 1)
                if sources_digest(REPO) != results["meta"]["code"]["sources_sha256"]:
                    results["meta"].setdefault("code_changed_during", []).append(part)
                    print(f"  note: the working tree's ovos_a2a_solver changed during part {part!r}; "
                          f"this run measures the snapshot taken at its start", flush=True)
    finally:
        results["meta"]["total_s"] = round(time.perf_counter() - started, 1)
        results["meta"]["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
        if args.json:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
        if args.keep:
            print(f"work directory kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print_table(results)
    code = results["meta"]["code"]
    print(f"code measured: snapshot of the working tree at start (HEAD {code['git_head']} + "
          f"{len(code['git_changed'])} changed file(s), sources {code['snapshot_sha256']})"
          + (f"; the working tree changed during {results['meta']['code_changed_during']}"
             if results["meta"].get("code_changed_during") else ""))
    print(f"total {results['meta']['total_s']} s" + (f"; JSON in {args.json}" if args.json else ""))


if __name__ == "__main__":
    main()
