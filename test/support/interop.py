"""Interop test infrastructure: real peer processes for A2A tests.

* :func:`peer_python` gives an interpreter for a pinned requirement set (:class:`PeerVenv`),
  built once into a cached venv shared between runs and processes: :func:`legacy_python` has a
  genuine a2a-sdk 0.3.x, :func:`adk_python` google-adk with its A2A helper.
* :class:`LegacyAgentProcess` runs ``test/support/legacy/v03_agent.py`` under the first,
  :class:`AdkAgentProcess` runs ``test/support/peers/adk_agent.py`` under the second.
* :class:`PersonaServerProcess` runs ``ovos-persona-server`` (A2A mounted at ``/a2a``).
"""
from __future__ import annotations

import fcntl
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Dict, List, Mapping, Optional, Tuple

import pytest

from support.network import free_port
from support.trust_store import installer_environment

HERE = Path(__file__).resolve().parent
LEGACY_AGENT_SCRIPT = HERE / "legacy" / "v03_agent.py"
LEGACY_CLIENT_SCRIPT = HERE / "legacy" / "v03_client.py"
#: where the peer scripts find ``port0_server`` (given to them as PYTHONPATH)
PEERS_DIR = HERE / "peers"
ADK_AGENT_SCRIPT = PEERS_DIR / "adk_agent.py"
ADK_CLIENT_SCRIPT = PEERS_DIR / "adk_client.py"

_READY_MARKER = ".ovos-a2a-ready"
_PIP_TIMEOUT = 900  # seconds for the whole pip install


def _pip_for(python: Path) -> list[str]:
    """pip of the tests' own interpreter, working on the venv of ``python``: a peer venv is made
    without a pip of its own (copying one in costs several seconds of CPU per venv)."""
    return [sys.executable, "-m", "pip", "--python", str(python)]


@dataclass(frozen=True)
class PeerVenv:
    """A requirement set, installed once into a venv of its own (see :func:`peer_python`)."""

    name: str                       # the venv's directory under the cache root
    requirements: Tuple[str, ...]   # exact pins, ``distribution[extras]==version``
    imports: Tuple[str, ...]        # modules the peer's scripts import
    python_var: str                 # an environment variable naming a ready interpreter instead

    def pins(self) -> Dict[str, str]:
        """Distribution name -> the exact version its requirement pins."""
        out = {}
        for requirement in self.requirements:
            name, sep, version = requirement.partition("==")
            if not sep:
                raise ValueError(f"{requirement!r} pins no exact version")
            out[name.split("[", 1)[0].strip()] = version.strip()
        return out


#: a genuine a2a-sdk 0.3 (not the 1.x compat layer), for test/support/legacy/
A2A_V03_VERSION = "0.3.26"
LEGACY_VENV = PeerVenv(
    name=f"venv-a2a-{A2A_V03_VERSION}",
    requirements=(f"a2a-sdk[http-server]=={A2A_V03_VERSION}", "uvicorn==0.34.3"),
    imports=("a2a.server.apps", "uvicorn"),
    python_var="A2A_V03_PYTHON",
)

#: google-adk with its A2A helper, for test/support/peers/adk_agent.py. ADK 2.x takes a2a-sdk 0.3 or
#: 1.x; pip resolves 1.x, so the agent speaks A2A 1.0 (ADK 1.x pins a2a-sdk 0.3 and its
#: ``to_a2a`` card offers no streaming). google-adk 2.x needs Python 3.11.
ADK_VERSION = "2.13.0"
ADK_MIN_PYTHON = (3, 11)
ADK_VENV = PeerVenv(
    name=f"venv-google-adk-{ADK_VERSION}",
    requirements=(f"google-adk[a2a]=={ADK_VERSION}", "a2a-sdk[http-server]==1.3.0", "uvicorn==0.54.0"),
    imports=("google.adk.a2a.utils.agent_to_a2a", "uvicorn"),
    python_var="ADK_PEER_PYTHON",
)


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ovos-a2a-solver-tests"


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


_PROBE = ("import importlib, importlib.metadata as m, json, sys; "
          "[importlib.import_module(n) for n in sys.argv[1].split(',')]; "
          "print(json.dumps({d: m.version(d) for d in sys.argv[2].split(',')}))")


def _check_python(python: Path, peer: PeerVenv) -> Optional[str]:
    """None if ``python`` imports the peer's modules and has every pinned version, else why not."""
    pins = peer.pins()
    try:
        out = subprocess.run([str(python), "-c", _PROBE, ",".join(peer.imports), ",".join(pins)],
                             capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return repr(e)
    if out.returncode != 0:
        return out.stderr or out.stdout or f"exit {out.returncode}"
    installed = json.loads(out.stdout)
    wrong = [f"{name} is {installed.get(name)!r}, expected {version}"
             for name, version in pins.items() if installed.get(name) != version]
    return "; ".join(wrong) or None


def _index_reachable(python: Path) -> bool:
    """Whether pip reaches its package index (as configured): it can list the versions of pip."""
    try:
        out = subprocess.run([*_pip_for(python), "index", "versions", "pip", "--disable-pip-version-check"],
                             capture_output=True, text=True, timeout=300, env=installer_environment())
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0


_ready_pythons: Dict[str, str] = {}  # venv directory -> its checked interpreter


def peer_python(peer: PeerVenv) -> str:
    """Path of a python interpreter that has exactly ``peer.requirements``.

    ``peer.python_var`` in the environment wins. Otherwise a venv is built once under
    ``${XDG_CACHE_HOME:-~/.cache}/ovos-a2a-solver-tests/<peer.name>`` and reused. Building
    holds an ``fcntl`` lock so two processes (e.g. pytest-xdist workers) never build at once; a
    half-built venv (no ready marker) is wiped and rebuilt. When pip cannot reach its package
    index, the calling test is skipped, with pip's output as the reason; any other failure
    raises ``RuntimeError`` with pip's output.
    """
    override = os.environ.get(peer.python_var)
    if override:
        return override
    root = _cache_root()
    venv = root / peer.name
    python = _venv_python(venv)
    if str(venv) in _ready_pythons:
        return _ready_pythons[str(venv)]

    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{peer.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not ((venv / _READY_MARKER).exists() and _check_python(python, peer) is None):
            _build(venv, peer)
    _ready_pythons[str(venv)] = str(python)
    return str(python)


def _build(venv: Path, peer: PeerVenv) -> None:
    """Install ``peer`` into a new venv at ``venv``; on any failure nothing is left there."""
    if venv.exists():
        shutil.rmtree(venv)
    python = _venv_python(venv)
    log: List[str] = []

    def run(cmd: List[str]) -> bool:
        log.append("$ " + " ".join(cmd))
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, timeout=_PIP_TIMEOUT, env=installer_environment())
        except (OSError, subprocess.TimeoutExpired) as e:
            log.append(getattr(e, "output", None) or "")
            log.append(repr(e))
            return False
        log.append(p.stdout)
        if p.returncode != 0:
            log.append(f"(exit {p.returncode})")
        return p.returncode == 0

    try:
        if not run([sys.executable, "-m", "venv", "--without-pip", str(venv)]):
            raise RuntimeError(f"creating the {peer.name} venv failed:\n" + "\n".join(log))
        if not run([*_pip_for(python), "install", "--disable-pip-version-check",
                    "--no-input", *peer.requirements]):
            if not _index_reachable(python):
                pytest.skip(f"the package index is unreachable, so the {peer.name} venv cannot be"
                            f" built:\n" + "\n".join(log))
            raise RuntimeError(f"building the {peer.name} venv failed:\n" + "\n".join(log))
        err = _check_python(python, peer)
        if err:
            raise RuntimeError(f"the {peer.name} venv was built but is unusable:\n"
                               + err + "\n" + "\n".join(log))
    except BaseException:
        shutil.rmtree(venv, ignore_errors=True)
        raise
    (venv / _READY_MARKER).write_text(json.dumps(
        {"requirements": peer.requirements, "built": time.time()}))


def legacy_python() -> str:
    """An interpreter with a genuine a2a-sdk 0.3 (``A2A_V03_PYTHON`` wins; see :func:`peer_python`)."""
    return peer_python(LEGACY_VENV)


def adk_python() -> str:
    """An interpreter with google-adk and its A2A helper (``ADK_PEER_PYTHON`` wins; see
    :func:`peer_python`)."""
    return peer_python(ADK_VENV)


# ---------------------------------------------------------------------------
# process helpers
# ---------------------------------------------------------------------------

class _OutputPump:
    """Drain a pipe in a daemon thread so the child never blocks on a full pipe."""

    def __init__(self, stream: IO[str], on_line=None) -> None:
        self.lines: List[str] = []
        self._lock = threading.Lock()
        self._on_line = on_line
        self._thread = threading.Thread(target=self._run, args=(stream,), daemon=True)
        self._thread.start()

    def _run(self, stream: IO[str]) -> None:
        try:
            for line in stream:
                with self._lock:
                    self.lines.append(line)
                if self._on_line is not None:
                    self._on_line(line)
        except (OSError, ValueError):
            pass
        finally:
            if self._on_line is not None:
                self._on_line(None)

    def join(self, timeout: float = 5.0) -> None:
        self._thread.join(timeout)

    def text(self) -> str:
        with self._lock:
            return "".join(self.lines)


def _terminate(proc: Optional[subprocess.Popen], timeout: float = 10.0) -> None:
    """SIGTERM, wait, then SIGKILL. Safe to call on an exited process or None."""
    if proc is None:
        return
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)
        except ProcessLookupError:
            pass
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass


# ---------------------------------------------------------------------------
# peer agents in their own interpreters
# ---------------------------------------------------------------------------

class PeerAgentProcess:
    """Run a peer agent script under the interpreter of its :class:`PeerVenv`.

    The script binds port 0 and prints one JSON line ``{"url": "http://127.0.0.1:PORT"}`` on
    stdout when it serves; :attr:`url` is that URL (:attr:`ready` the whole line). Subclasses
    name the script and the venv (or another :meth:`command`).
    The script finds the peers' shared start-up (``port0_server``) on its PYTHONPATH.
    """

    script: Path
    venv: PeerVenv

    def __init__(self, *args: str, python: Optional[str] = None, startup_timeout: float = 30.0) -> None:
        self.args = args
        self._python = python
        self.startup_timeout = startup_timeout
        self.proc: Optional[subprocess.Popen] = None
        self.url: Optional[str] = None
        self.ready: Dict[str, str] = {}  # the ready line
        self.startup_seconds: Optional[float] = None
        self._stderr: Optional[_OutputPump] = None
        self._stdout: Optional[_OutputPump] = None

    @property
    def stderr(self) -> str:
        return self._stderr.text() if self._stderr else ""

    def start(self):
        if self.proc is not None:
            raise RuntimeError(f"{type(self).__name__} already started")
        command, env = self.command()
        ready: "queue.Queue[Optional[str]]" = queue.Queue()
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, bufsize=1, env=env,
        )
        self._stderr = _OutputPump(self.proc.stderr)
        self._stdout = _OutputPump(self.proc.stdout, on_line=ready.put)
        deadline = t0 + self.startup_timeout
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise RuntimeError(
                        f"{self.script.name} printed no ready line within {self.startup_timeout} s;"
                        f" stderr:\n{self.stderr}")
                try:
                    line = ready.get(timeout=min(remaining, 0.5))
                except queue.Empty:
                    continue
                if line is None:  # stdout closed: the process died
                    self.proc.wait(timeout=10)
                    self._stderr.join()
                    raise RuntimeError(
                        f"{self.script.name} exited with {self.proc.returncode} before it was ready;"
                        f" stderr:\n{self.stderr}")
                try:
                    self.ready = json.loads(line)
                    self.url = self.ready["url"]
                    break
                except (ValueError, KeyError, TypeError):
                    continue  # not the ready line
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def command(self) -> Tuple[List[str], Dict[str, str]]:
        """The command that runs the script, and its environment."""
        python = self._python or peer_python(self.venv)
        return ([python, str(self.script), *self.args],
                {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(PEERS_DIR)})

    def stop(self) -> None:
        """SIGTERM, wait up to 10 s, then SIGKILL. Idempotent."""
        proc, self.proc = self.proc, None
        _terminate(proc)
        self.url = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class LegacyAgentProcess(PeerAgentProcess):
    """Run ``test/support/legacy/v03_agent.py`` (a2a-sdk 0.3.x) in its own interpreter.

    ::

        with LegacyAgentProcess() as legacy:
            legacy.url            # http://127.0.0.1:PORT
            legacy.agent("echo")  # http://127.0.0.1:PORT/echo  (card: + /.well-known/agent-card.json)

    Agents: ``echo`` (completes with artifact ``echo03[{contextId}]: {text}``), ``ask``
    (input-required "which city?", then ``continued03[{contextId}]: {text}``) and ``ask-rest``
    (``ask`` over the 0.3 server's HTTP+JSON; its card prefers ``HTTP+JSON``); ``POST
    {url}/_admin/forget`` makes them forget their tasks, as a restart would.  Cards are 0.3
    cards (``url`` = ``{agent}/``, ``preferredTransport: JSONRPC``, ``protocolVersion: 0.3.0``,
    ``capabilities.streaming: true``), so an a2a-sdk 1.x client uses its Compat JSON-RPC transport.

    Observed with the a2a-sdk 1.3.0 client: blocking sends yield one ``task`` (COMPLETED, or
    INPUT_REQUIRED for ``ask``); streaming yields ``task``(SUBMITTED), ``status_update``(WORKING),
    ``artifact_update``, ``status_update``(COMPLETED); the streamed ``ask`` first turn is
    ``task``(SUBMITTED), ``status_update``(INPUT_REQUIRED); the streamed continuation starts with
    ``status_update``(WORKING) and carries **no** ``task``.  A message to a completed task fails with
    ``InvalidParamsError`` (-32602) from this 0.3 server, where a 1.x server raises
    ``UnsupportedOperationError`` (-32004).  Start-up to the ready line takes about 1 s.
    """

    script = LEGACY_AGENT_SCRIPT
    venv = LEGACY_VENV

    def __init__(self, python: Optional[str] = None, startup_timeout: float = 30.0) -> None:
        super().__init__(python=python, startup_timeout=startup_timeout)

    def agent(self, name: str) -> str:
        if self.url is None:
            raise RuntimeError("LegacyAgentProcess is not running")
        return f"{self.url}/{name}"


class AdkAgentProcess(PeerAgentProcess):
    """Run ``test/support/peers/adk_agent.py``: a deterministic google-adk agent published with ADK's
    own ``to_a2a``, its card and JSON-RPC at :attr:`url`.

    ``executor`` is ``"default"`` (what ``to_a2a`` builds) or ``"artifacts"`` (ADK's executor
    that streams artifacts); the script's docstring tells what each sends. Start-up to the
    ready line takes about 1.5 s.
    """

    script = ADK_AGENT_SCRIPT
    venv = ADK_VENV

    def __init__(self, executor: str = "default", python: Optional[str] = None,
                 startup_timeout: float = 30.0) -> None:
        super().__init__("--executor", executor, python=python, startup_timeout=startup_timeout)


def run_adk_client(card_url: str, *texts: str, streaming: bool = True, timeout: float = 120.0) -> List[dict]:
    """Send ``texts`` in one ADK session through google-adk's ``RemoteA2aAgent``
    (``test/support/peers/adk_client.py``): one dict per text, as the script prints it (what ADK
    kept of the remote agent's reply, its final text, its partial texts). A failing client raises
    ``AssertionError`` with its output."""
    command = [adk_python(), str(ADK_CLIENT_SCRIPT), card_url, *([] if streaming else ["--blocking"]), *texts]
    out = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert out.returncode == 0, f"$ {' '.join(command)}\n-> exit {out.returncode}\n{out.stdout}{out.stderr}"
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


# ---------------------------------------------------------------------------
# ovos-persona-server with its A2A endpoint
# ---------------------------------------------------------------------------

class PersonaServerStartError(RuntimeError):
    pass


class PersonaServerProcess:
    """Run ``ovos-persona-server --persona FILE --a2a-base-url .../a2a`` on a free loopback port.

    ::

        with PersonaServerProcess(tmp_path / "rive.json") as srv:
            srv.url       # http://127.0.0.1:P
            srv.a2a_url   # http://127.0.0.1:P/a2a   (A2A card: + /.well-known/agent-card.json)

    The console script comes from the venv of ``sys.executable``.  It has no port-0 support, so a
    free port is picked first; if the server then exits because the port was taken in between
    (``address already in use``), it is retried on another port.  Ready means
    ``GET {a2a_url}/.well-known/agent-card.json`` answered 200 with a card that points at our
    ``a2a_url`` (so a foreign server on a recycled port is not mistaken for ours).

    Observed behaviour of ovos-persona-server 0.18.11a1 (+ a2a-sdk 1.3.0, ovos-persona 0.9.0a35):

    * **Mounts.** A2A at ``/a2a/`` for the default (first) persona, and one more per persona at
      ``/a2a/<persona name>/``.  Each serves the card at ``/.well-known/agent-card.json`` and at the
      0.3 path ``/.well-known/agent.json``.  Start-up to a 200 card takes about 4 s.
    * **Card.** ``name`` = persona name; ``description`` = the persona JSON's ``description`` or
      ``"OVOS Persona: <name>"``; ``version: "1.0"``; ``supportedInterfaces`` = JSONRPC
      ``protocolVersion "1.0"`` then JSONRPC ``"0.3"``, both at ``{a2a_url}/`` (trailing slash);
      the SDK adds the legacy fields ``url`` / ``preferredTransport: JSONRPC`` /
      ``protocolVersion: "0.3"``; ``capabilities: {streaming: true}`` (no pushNotifications);
      ``defaultInputModes``/``defaultOutputModes`` are ``["text"]`` (not a MIME type); one skill
      ``chat``.  An a2a-sdk 1.3 client picks the 1.0 ``JsonRpcTransport``.
    * **Methods.** ``SendMessage`` / ``SendStreamingMessage`` work with header ``A2A-Version: 1.0``;
      without the header they fail with ``-32009`` (VersionNotSupported).  The 0.3 names
      ``message/send`` / ``message/stream`` (``enable_v0_3_compat=True``) work without a header
      and answer in 0.3 JSON (``kind``, lowercase states, ``final``).  No REST binding.
    * **Streaming works** on both versions: ``task`` (SUBMITTED), ``statusUpdate`` (WORKING), one
      ``artifactUpdate`` per sentence of ``Persona.stream`` (one artifact ``id/name "response"``,
      ``append`` true after the first chunk, ``lastChunk`` never true), ``statusUpdate`` (COMPLETED).
      A blocking send returns the COMPLETED task with the ``response`` artifact.
    * **Sessions.** Every message is a new task (the agent never asks for input).  The A2A
      ``contextId`` (client-supplied ones are kept as is; otherwise the SDK makes a UUID) becomes
      ``Session(session_id=contextId)`` and so the ``session_id`` the persona's handlers get.  Only
      the current message's text reaches the persona (``[{"role": "user", ...}]``, no A2A history),
      so the server is stateless unless ``CHAT_MEMORY=transparent`` (pass it in ``extra_env``): then
      the persona's memory plugin is keyed by contextId (``"<persona>::<contextId>"`` when several
      personas are served).  If no handler answers, the task ends FAILED with the reason as its
      status message.
    * **Quirk (rivescript).** ``ovos-solver-rivescript-plugin`` answers every session as the one
      RiveScript user ``"human"``, so its own state (e.g. "Didn't you just say that?") leaks across
      contextIds ("my name is alice" in context A, then "what is my name" in context B answers
      "You told me your name is Alice."); do not use it to test per-context memory. This package's
      ``ovos-a2a-rivescript`` (what the tests serve) keeps one memory per contextId.
    * A message carrying the taskId of a completed task fails with ``UnsupportedOperationError``
      (-32004); send only the contextId to continue a conversation.
    """

    def __init__(self, persona_json_path, extra_env: Optional[Mapping[str, str]] = None,
                 startup_timeout: float = 60.0, host: str = "127.0.0.1",
                 port_attempts: int = 3) -> None:
        self.persona_json_path = Path(persona_json_path)
        self.extra_env: Dict[str, str] = dict(extra_env or {})
        self.startup_timeout = startup_timeout
        self.host = host
        self.port_attempts = port_attempts
        self.executable = Path(sys.executable).parent / "ovos-persona-server"
        self.proc: Optional[subprocess.Popen] = None
        self.port: Optional[int] = None
        self.startup_seconds: Optional[float] = None
        self._output: Optional[_OutputPump] = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("PersonaServerProcess is not running")
        return f"http://{self.host}:{self.port}"

    @property
    def a2a_url(self) -> str:
        return f"{self.url}/a2a"

    @property
    def output(self) -> str:
        """Combined stdout+stderr of the server so far."""
        return self._output.text() if self._output else ""

    def start(self) -> "PersonaServerProcess":
        if self.proc is not None:
            raise RuntimeError("PersonaServerProcess already started")
        if not self.executable.exists():
            raise RuntimeError(f"{self.executable} not found: install ovos-persona-server[a2a] "
                               f"into the venv of {sys.executable}")
        if not self.persona_json_path.exists():
            raise FileNotFoundError(self.persona_json_path)
        t0 = time.monotonic()
        last: Optional[Exception] = None
        for _ in range(self.port_attempts):
            try:
                self._start_once(free_port(self.host))
                self.startup_seconds = time.monotonic() - t0
                return self
            except PersonaServerStartError as e:
                last = e
                if "address already in use" not in str(e).lower():
                    raise
        raise PersonaServerStartError(f"no free port after {self.port_attempts} attempts") from last

    def _start_once(self, port: int) -> None:
        a2a_url = f"http://{self.host}:{port}/a2a"
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **self.extra_env}
        self.port = port
        self.proc = subprocess.Popen(
            [str(self.executable), "--persona", str(self.persona_json_path),
             "--host", self.host, "--port", str(port), "--a2a-base-url", a2a_url],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, bufsize=1, env=env,
        )
        self._output = _OutputPump(self.proc.stdout)
        card_url = f"{a2a_url}/.well-known/agent-card.json"
        deadline = time.monotonic() + self.startup_timeout
        try:
            while True:
                if self.proc.poll() is not None:
                    self._output.join()
                    raise PersonaServerStartError(
                        f"ovos-persona-server exited with {self.proc.returncode} before it was"
                        f" ready (port {port}); output:\n{self.output}")
                if self._card_ready(card_url, a2a_url):
                    return
                if time.monotonic() > deadline:
                    raise PersonaServerStartError(
                        f"ovos-persona-server did not serve {card_url} within"
                        f" {self.startup_timeout} s; output:\n{self.output}")
                time.sleep(0.2)
        except BaseException:
            self.stop()
            raise

    @staticmethod
    def _card_ready(card_url: str, a2a_url: str) -> bool:
        try:
            with urllib.request.urlopen(card_url, timeout=5) as resp:
                if resp.status != 200:
                    return False
                card = json.loads(resp.read().decode("utf-8"))
        except (urllib.error.URLError, OSError, ValueError):
            return False
        urls = [i.get("url", "") for i in card.get("supportedInterfaces", [])] + [card.get("url", "")]
        return any(u.rstrip("/") == a2a_url for u in urls)

    def stop(self) -> None:
        """SIGTERM, wait up to 10 s, then SIGKILL. Idempotent."""
        proc, self.proc = self.proc, None
        _terminate(proc)
        if self._output is not None:
            self._output.join(timeout=2)

    def __enter__(self) -> "PersonaServerProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
