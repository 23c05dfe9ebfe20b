"""What deploy/ ships works as written: the systemd unit verifies and its readiness and stop
are real (the bridge speaks systemd's notification protocol), and the container files name
only stock images and valid commands."""
import configparser
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ovos_a2a_solver.bridge.config import BridgeSettings
from ovos_a2a_solver.cli import build_parser

from support import REPO_ROOT
from support.bridge_process import BridgeProcess

DEPLOY = REPO_ROOT / "deploy"
UNIT = DEPLOY / "ovos-a2a.service"
STOCK_IMAGES = {"postgres:16", "caddy:2"}


def unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read(UNIT)
    return parser


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed")
def test_the_systemd_unit_verifies_without_a_warning(tmp_path):
    command = shutil.which("ovos-a2a", path=str(Path(sys.executable).parent)) or shutil.which("ovos-a2a")
    assert command, "the ovos-a2a command is not installed next to this Python"
    text = UNIT.read_text().replace("ExecStart=/opt/ovos-a2a/bin/ovos-a2a", f"ExecStart={command}")
    assert text != UNIT.read_text(), "ExecStart is not the documented /opt/ovos-a2a/bin/ovos-a2a"
    copy = tmp_path / UNIT.name
    copy.write_text(text)
    result = subprocess.run(["systemd-analyze", "verify", str(copy)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and not result.stderr.strip(), result.stderr  # a warning is a failure too


def test_the_unit_waits_for_readiness_and_gives_the_graceful_stop_its_time():
    service = unit()["Service"]
    assert service["Type"] == "notify" and service["NotifyAccess"] == "main"
    assert shlex.split(service["ExecStart"])[1:] == ["serve"]
    assert service["KillSignal"] == "SIGTERM"
    grace = BridgeSettings().shutdown_grace
    assert float(service["TimeoutStopSec"]) >= grace + 10, "systemd would kill the bridge while it drains"


class NotifySocket:
    """A Unix datagram socket standing in for systemd's: it reads what the bridge tells it,
    with the sender's process id (SO_PASSCRED)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.bind(str(path))
        self.sock.settimeout(30)

    def receive(self) -> tuple[int, str]:
        """(sender's pid, message); a wait beyond 30 s fails."""
        data, ancillary, _flags, _address = self.sock.recvmsg(4096, socket.CMSG_SPACE(struct.calcsize("3i")))
        pid = next(struct.unpack("3i", payload)[0] for level, kind, payload in ancillary
                   if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS)
        return pid, data.decode()

    def close(self) -> None:
        self.sock.close()


@pytest.mark.parametrize("workers", [1, 2])
def test_the_bridge_tells_systemd_it_is_ready_once_and_when_it_stops(tmp_path, workers):
    manager = NotifySocket(tmp_path / "notify")
    try:
        bridge = BridgeProcess("--workers", str(workers), env={"NOTIFY_SOCKET": str(manager.path)})
        try:
            pid, ready = manager.receive()
            assert pid == bridge.proc.pid, "READY=1 must come from the process systemd started"
            assert ready.splitlines()[0] == "READY=1" and f"STATUS=serving \"echo\" at {bridge.url}" in ready
            bridge.proc.send_signal(signal.SIGTERM)
            pid, stopping = manager.receive()
            assert (pid, stopping) == (bridge.proc.pid, "STOPPING=1")
            assert bridge.proc.wait(timeout=30) == 0
        finally:
            bridge.stop()
        manager.sock.settimeout(0.5)
        with pytest.raises(socket.timeout):  # nothing more: no worker spoke for itself
            manager.receive()
    finally:
        manager.close()


def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def test_the_compose_file_names_only_stock_images_and_builds_the_bridge_from_this_checkout():
    services = compose()["services"]
    images = {s["image"] for s in services.values() if "image" in s}
    assert images <= STOCK_IMAGES, images - STOCK_IMAGES
    bridges = {name: s for name, s in services.items() if "build" in s}
    assert set(bridges) == {"bridge-1", "bridge-2"}
    for service in bridges.values():
        assert (DEPLOY / service["build"]["context"] / service["build"]["dockerfile"]).resolve() == \
            (DEPLOY / "Containerfile").resolve()


def test_the_container_commands_are_valid_ovos_a2a_commands():
    for name, service in compose()["services"].items():
        if "build" in service:
            command = service["command"]
            assert command[:2] == ["ovos-a2a", "serve"], name
            build_parser().parse_args(command[1:])  # flags the command knows (argparse exits on others)
    lines = (DEPLOY / "Containerfile").read_text().splitlines()
    assert lines[[line.startswith("FROM ") for line in lines].index(True)].startswith("FROM python:3.11")
    for keyword in ("CMD", "HEALTHCHECK"):
        line = next(line for line in lines if line.startswith(keyword + " "))
        argv = yaml.safe_load(line[line.index("["):])  # the exec form is a JSON list
        assert argv[0] == "ovos-a2a", line
        build_parser().parse_args(argv[1:])
    assert "pip install --no-cache-dir '/src[server,postgresql]'" in "\n".join(lines)


def test_no_deploy_file_puts_a_secret_on_a_command_line():
    """Every user of a machine reads every command line (ps): the password, the tokens and the
    database URL (with its password) reach the bridge in its environment."""
    from dataclasses import fields

    from ovos_a2a_solver.bridge.config import holds_secret

    lines = (DEPLOY / "Containerfile").read_text().splitlines()
    commands = {name: service["command"] for name, service in compose()["services"].items() if "build" in service}
    commands["Containerfile"] = yaml.safe_load(next(line for line in lines if line.startswith("CMD "))[4:])
    commands["ovos-a2a.service"] = shlex.split(unit()["Service"]["ExecStart"])
    for name, argv in commands.items():
        args = vars(build_parser().parse_args(argv[1:]))
        shown = [f.name for f in fields(BridgeSettings) if args.get(f.name) and holds_secret(f, args[f.name])]
        assert shown == [], f"{name} passes {shown} on its command line"
    for name, service in compose()["services"].items():
        if "build" in service:
            assert {"OVOS_A2A_PASSWORD", "OVOS_A2A_DB"} <= set(service["environment"]), name


def test_the_container_build_leaves_out_local_files():
    ignored = (REPO_ROOT / ".dockerignore").read_text().split()
    assert {".git", ".venv"} <= set(ignored)
