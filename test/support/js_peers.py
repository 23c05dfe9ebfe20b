"""The official A2A JS SDK (``@a2a-js/sdk``) as a real peer: its server and its client, in Node.

* :func:`node_modules` gives the ``node_modules`` of a pinned npm project (:class:`NpmProject`),
  installed once into a cache shared between runs and processes, as
  :func:`support.interop.peer_python` does for Python peers. :data:`JS_SDK_1` is @a2a-js/sdk
  1.3 (A2A 1.0), :data:`JS_SDK_03` is 0.3.14 (A2A 0.3).
* :class:`JsAgentProcess` runs ``test/support/peers/js/agent_v1.cjs`` or ``agent_v03.cjs``.
* :func:`run_js_client` runs ``client_v1.cjs`` or ``client_v03.cjs`` once.
* :data:`OIDC_PROVIDER` is the authorization server of the sign-in tests (``support.authorization_server``).

Node and npm must be on PATH (Debian: ``apt-get install nodejs npm``; @a2a-js/sdk 1.x wants
Node 20 or newer). The scripts are CommonJS, so they find the cached packages through
``NODE_PATH``.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

from support.interop import _READY_MARKER, PeerAgentProcess, _cache_root

JS_DIR = Path(__file__).resolve().parent / "peers" / "js"
#: the lockfile of each project (``<name>.package-lock.json``): made with ``npm install --package-lock-only``
#: from the project's package.json, its ``resolved`` addresses left out (npm takes the registry it is set to)
LOCKS_DIR = JS_DIR / "locks"
_NPM_TIMEOUT = 600  # seconds for the whole npm install


@dataclass(frozen=True)
class NpmProject:
    """An npm project of exact pins, installed once into a directory of its own (see
    :func:`node_modules`), and the scripts that run under it."""

    name: str                                  # the project's directory under the cache root
    dependencies: Tuple[Tuple[str, str], ...]  # (package, exact version)
    modules_var: str                           # an environment variable naming a ready node_modules instead
    min_node: int                              # the oldest Node major version the packages run on
    agent_script: str = ""                     # the server the project runs, under test/support/peers/js/
    client_script: str = ""                    # an A2A SDK's client, under the same
    protocol_version: str = ""                 # the A2A version an A2A SDK speaks


_GRPC_PINS = (("@grpc/grpc-js", "1.14.7"), ("@bufbuild/protobuf", "2.17.0"))

JS_SDK_1 = NpmProject(
    name="npm-a2a-js-sdk-1.3.0",
    dependencies=(("@a2a-js/sdk", "1.3.0"), ("express", "5.3.0"), *_GRPC_PINS),
    modules_var="A2A_JS_SDK_1_MODULES",
    agent_script="agent_v1.cjs", client_script="client_v1.cjs", protocol_version="1.0", min_node=20,
)
JS_SDK_03 = NpmProject(
    name="npm-a2a-js-sdk-0.3.14",
    dependencies=(("@a2a-js/sdk", "0.3.14"), ("express", "5.3.0"), *_GRPC_PINS),
    modules_var="A2A_JS_SDK_03_MODULES",
    agent_script="agent_v03.cjs", client_script="client_v03.cjs", protocol_version="0.3", min_node=18,
)
#: oidc-provider (OpenID Certified, the device authorization grant built in): the authorization server
#: of the sign-in tests (``support.authorization_server``)
OIDC_PROVIDER = NpmProject(
    name="npm-oidc-provider-9.13.3",
    dependencies=(("oidc-provider", "9.13.3"),),
    modules_var="OIDC_PROVIDER_MODULES",
    agent_script="authorization_server.cjs", min_node=20,
)


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"{name} is not on PATH: the JS SDK peers need Node and npm"
                           f" (Debian: apt-get install nodejs npm)")
    return path


def _check_node(project: NpmProject) -> None:
    """Raise ``RuntimeError`` when the Node on PATH is older than ``project`` needs."""
    node = _tool("node")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    if int(version.lstrip("v").split(".", 1)[0] or 0) < project.min_node:
        raise RuntimeError(f"{project.name} needs Node {project.min_node} or newer; {node} is {version}")


def _check_project(modules: Path, project: NpmProject) -> Optional[str]:
    """None if ``modules`` holds every pinned package at its version, else why not."""
    wrong = []
    for package, version in project.dependencies:
        try:
            found = json.loads((modules / package / "package.json").read_text())["version"]
        except (OSError, ValueError, KeyError) as e:
            wrong.append(f"{package}: {e!r}")
            continue
        if found != version:
            wrong.append(f"{package} is {found}, expected {version}")
    return "; ".join(wrong) or None


def _registry_reachable(npm: str) -> bool:
    try:
        return subprocess.run([npm, "ping"], capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


_ready_modules: Dict[str, str] = {}  # project directory -> its checked node_modules


def node_modules(project: NpmProject) -> str:
    """Path of a ``node_modules`` that has exactly ``project.dependencies``.

    ``project.modules_var`` in the environment wins. Otherwise the project is installed once
    under ``${XDG_CACHE_HOME:-~/.cache}/ovos-a2a-solver-tests/<project.name>`` and reused, under
    an ``fcntl`` lock; a half-installed one (no ready marker) is wiped and installed again. When
    npm cannot reach its registry, the calling test is skipped with npm's output as the reason;
    any other failure raises ``RuntimeError``.
    """
    override = os.environ.get(project.modules_var)
    if override:
        return override
    root = _cache_root()
    directory = root / project.name
    if str(directory) in _ready_modules:
        return _ready_modules[str(directory)]
    npm = _tool("npm")
    _check_node(project)
    root.mkdir(parents=True, exist_ok=True)
    modules = directory / "node_modules"
    with open(root / f"{project.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (_installed_from_its_lockfile(directory, project) and _check_project(modules, project) is None):
            _install(directory, project, npm)
    _ready_modules[str(directory)] = str(modules)
    return str(modules)


def _install(directory: Path, project: NpmProject, npm: str) -> None:
    """Install ``project`` into a new ``directory``; on any failure nothing is left there."""
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    try:
        (directory / "package.json").write_text(json.dumps(
            {"name": project.name, "private": True, "dependencies": dict(project.dependencies)}, indent=2))
        # every package at the version and checksum its lockfile names (the peers' projects have one;
        # only the tests of this helper install without), none of their install scripts run
        lockfile = LOCKS_DIR / f"{project.name}.package-lock.json"
        if lockfile.exists():
            shutil.copyfile(lockfile, directory / "package-lock.json")
        command = [npm, "ci" if lockfile.exists() else "install", "--no-audit", "--no-fund", "--ignore-scripts",
                   "--no-update-notifier"]
        try:
            out = subprocess.run(command, cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True, timeout=_NPM_TIMEOUT)
            log, ok = out.stdout, out.returncode == 0
        except (OSError, subprocess.TimeoutExpired) as e:
            log, ok = f"{getattr(e, 'output', None) or ''}\n{e!r}", False
        if not ok:
            if not _registry_reachable(npm):
                pytest.skip(f"npm's registry is unreachable, so {project.name} cannot be installed:\n{log}")
            raise RuntimeError(f"installing {project.name} failed:\n$ {' '.join(command)}\n{log}")
        err = _check_project(directory / "node_modules", project)
        if err:
            raise RuntimeError(f"{project.name} was installed but is unusable: {err}\n{log}")
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    (directory / _READY_MARKER).write_text(json.dumps(
        {"dependencies": dict(project.dependencies), "lockfile": _lockfile_digest(project), "built": time.time()}))


def _lockfile_digest(project: NpmProject) -> str:
    import hashlib

    lockfile = LOCKS_DIR / f"{project.name}.package-lock.json"
    return hashlib.sha256(lockfile.read_bytes()).hexdigest() if lockfile.exists() else ""


def _installed_from_its_lockfile(directory: Path, project: NpmProject) -> bool:
    """Whether ``directory`` holds a finished install of ``project`` from its lockfile as it is now."""
    try:
        marker = json.loads((directory / _READY_MARKER).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(marker, dict) and marker.get("lockfile") == _lockfile_digest(project)


def _node_env(project: NpmProject) -> Dict[str, str]:
    return {**os.environ, "NODE_PATH": node_modules(project)}


class JsAgentProcess(PeerAgentProcess):
    """Run the JS SDK's server with the scripted agent (``test/support/peers/js/agent_v*.cjs``).

    ::

        with JsAgentProcess(JS_SDK_1) as js:
            js.agent("rest")      # http://127.0.0.1:PORT/rest (card: + /.well-known/agent-card.json)
            js.restart()          # the same agent in a new process, on the same ports: its tasks are gone

    One agent per binding (``jsonrpc``, ``rest``, ``grpc``), each with a card naming only that
    binding; the script's header says what they answer. ``module_format`` is the SDK build that
    serves: ``"esm"`` (its ES modules, what ``import`` gets) or ``"cjs"`` (its CommonJS build;
    see ``peers/js/sdk.cjs`` for how they differ). ``legacy``: the 1.x SDK speaks A2A 0.3
    through its compat layer. Start-up to the ready line takes about 0.2 s.
    """

    def __init__(self, project: NpmProject, module_format: str = "esm", legacy: bool = False,
                 startup_timeout: float = 30.0) -> None:
        super().__init__(*self._options(legacy), startup_timeout=startup_timeout)
        self.project = project
        self.module_format = module_format
        self.legacy = legacy
        #: the A2A version its cards name
        self.protocol_version = "0.3" if legacy else project.protocol_version
        self.script = JS_DIR / project.agent_script

    @staticmethod
    def _options(legacy: bool, port: str = "0", grpc_port: str = "0") -> Tuple[str, ...]:
        return ("--port", port, "--grpc-port", grpc_port, *(["--legacy"] if legacy else []))

    def command(self) -> Tuple[List[str], Dict[str, str]]:
        return ([_tool("node"), str(self.script), *self.args],
                {**_node_env(self.project), "A2A_JS_MODULE_FORMAT": self.module_format})

    def agent(self, binding: str) -> str:
        if self.url is None:
            raise RuntimeError("JsAgentProcess is not running")
        return f"{self.url}/{binding}"

    def restart(self) -> "JsAgentProcess":
        """Stop the process and start the agent again on the same ports (what a restart does to
        the agent's in-memory tasks and memory: they are gone)."""
        port = self.url.rsplit(":", 1)[1]
        grpc_port = self.ready["grpc"].rsplit(":", 1)[1]
        self.stop()
        self.args = self._options(self.legacy, port, grpc_port)
        return self.start()


def run_js_client(project: NpmProject, card_url: str, transport: str, *texts: str,
                  stream: bool = False, timeout: float = 60.0) -> List[dict]:
    """Send ``texts`` in one conversation with the JS SDK's client (``client_v*.cjs``): one dict
    per text, as the script prints it. A failing client raises ``AssertionError`` with its
    output."""
    command = [_tool("node"), str(JS_DIR / project.client_script), card_url, transport,
               *(["--stream"] if stream else []), *texts]
    out = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=_node_env(project))
    assert out.returncode == 0, f"$ {' '.join(command)}\n-> exit {out.returncode}\n{out.stdout}{out.stderr}"
    return [json.loads(line) for line in out.stdout.splitlines()]
