"""Two bridges never share tasks: each has its own default store, a store held by a live
bridge is refused to a second one, and a persona never relays to the bridge that serves it."""
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from support import REPO_ROOT
from support.bridge_in_process import InProcessBridge
from support.bridge_process import BridgeProcess, BridgeStartError
from support.cli_run import Cli
from support.bridge_rpc import answer, get_task, message, rpc, send, task_of
from support.network import free_port
from support.personas import relay_persona


def refusal(args: tuple = (), **kwargs) -> BridgeStartError:
    """The error of a bridge that must not start."""
    with pytest.raises(BridgeStartError) as refused:
        BridgeProcess(*args, **kwargs).stop()
    return refused.value


def test_bridges_of_two_personas_keep_their_tasks_apart_by_default(private_state, tmp_path):
    """The relay bridge of the README and a bridge of the embedded persona, both on their
    default stores: a task of one is unknown to the other."""
    with BridgeProcess(default_state_dir=True) as echo, \
            BridgeProcess("--persona", str(relay_persona(tmp_path, "http://127.0.0.1:9/a2a")), backend="persona",
                          default_state_dir=True) as relay:
        task = task_of(send(echo.url, message("hello")))
        assert answer(task) == "echo: hello"
        found = get_task(relay.url, task["id"])
        assert found.get("error", {}).get("code") == -32001, found  # TaskNotFound
        assert f"tasks kept in {private_state}/ovos_a2a_solver/bridge/echo-0/bridge.sqlite3" in echo.stdout_text()
    stores = sorted(p.relative_to(private_state) for p in private_state.rglob("bridge.sqlite3"))
    assert stores == [Path("ovos_a2a_solver/bridge/echo-0/bridge.sqlite3"),
                      Path("ovos_a2a_solver/bridge/relay-0/bridge.sqlite3")], stores


@pytest.mark.parametrize("second_backend", ["echo", "persona"])
def test_a_store_held_by_a_live_bridge_is_refused_with_one_line_naming_it(second_backend, tmp_path):
    with BridgeProcess(state_dir=tmp_path / "shared") as first:
        refused = refusal(state_dir=tmp_path / "shared", backend=second_backend)
        assert refused.returncode == 2
        line = refused.stderr.strip().splitlines()[-1]
        assert line.startswith("ovos-a2a: the task store "), line
        assert f'in use by the bridge of persona "echo" at {first.url} (process {first.proc.pid})' in line, line
        assert "--state-dir" in line, line
        # the first bridge goes on serving, its running work untouched
        assert answer(task_of(send(first.url, message("still here")))) == "echo: still here"


def test_a_store_is_free_again_once_its_bridge_is_killed(tmp_path):
    first = BridgeProcess(state_dir=tmp_path / "store")
    task = task_of(send(first.url, message("kept")))
    first.kill9()
    with BridgeProcess(state_dir=tmp_path / "store") as second:
        assert answer(task_of(get_task(second.url, task["id"]))) == "echo: kept"


def test_the_workers_of_one_bridge_share_its_store(tmp_path):
    with BridgeProcess("--workers", "2", state_dir=tmp_path / "store") as bridge:
        tasks = [task_of(send(bridge.url, message(f"m{n}"))) for n in range(6)]
        assert [answer(task_of(get_task(bridge.url, t["id"]))) for t in tasks] == [f"echo: m{n}" for n in range(6)]
        assert refusal(state_dir=tmp_path / "store").returncode == 2


def test_an_earlier_versions_shared_store_is_pointed_out_not_lost(private_state):
    earlier = private_state / "ovos_a2a_solver" / "bridge"
    with BridgeProcess(state_dir=earlier) as old:  # where every bridge kept its tasks before
        task = task_of(send(old.url, message("from before")))
    with BridgeProcess(default_state_dir=True) as new:
        assert f"--state-dir {earlier}" in new.stderr_text()
    with BridgeProcess(state_dir=earlier) as again:
        assert answer(task_of(get_task(again.url, task["id"]))) == "echo: from before"


@pytest.mark.parametrize("address", ["http://127.0.0.1:{port}/a2a", "http://localhost:{port}/a2a/",
                                     "127.0.0.1:{port}"])
def test_a_persona_relaying_to_its_own_bridge_is_refused_at_start(address, tmp_path):
    port = free_port()
    persona = relay_persona(tmp_path, address.format(port=port))
    refused = refusal(args=("--persona", str(persona)), backend="persona", port=port)
    assert refused.returncode == 2
    line = refused.stderr.strip().splitlines()[-1]
    assert line.startswith("ovos-a2a: the persona relays to this bridge's own address"), line
    assert '"agent_url"' in line, line


def test_a_persona_relaying_to_another_port_starts(tmp_path):
    persona = relay_persona(tmp_path, f"http://127.0.0.1:{free_port()}/a2a")
    with BridgeProcess("--persona", str(persona), backend="persona") as bridge:
        assert bridge.name == "relay"


def test_the_example_personas_point_at_no_bridge_default_address():
    for path in sorted((REPO_ROOT / "persona_examples").glob("*.json")):
        block = json.loads(path.read_text()).get("ovos-a2a-solver") or {}
        url = block.get("agent_url") or block.get("url") or ""
        assert ":8337" not in url, f"{path.name} relays to the bridge's own default port: {url}"


def test_a_task_is_continued_only_by_the_persona_that_began_it(tmp_path):
    """A store that another persona's bridge used before (not live any more): its tasks are
    read there, but a follow-up is refused, in words; their own persona continues them again."""
    store = tmp_path / "store"
    with InProcessBridge(state_dir=store) as echo:  # persona "echo"
        asking = task_of(send(echo.url, message("ask:which city?")))
        assert asking["status"]["state"] == "TASK_STATE_INPUT_REQUIRED" and asking["metadata"]["persona"] == "echo"
    follow_up = message("lisbon", task_id=asking["id"], context_id=asking["contextId"])
    with InProcessBridge(state_dir=store, backend="scenarios") as other:  # persona "scenarios"
        assert task_of(get_task(other.url, asking["id"]))["id"] == asking["id"]  # read: yes
        refused = send(other.url, follow_up)["error"]
        assert refused["code"] == -32602, refused
        assert 'begun by the persona "echo", and this bridge serves "scenarios"' in refused["message"], refused
        assert task_of(get_task(other.url, asking["id"]))["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    with InProcessBridge(state_dir=store) as echo:
        assert answer(task_of(send(echo.url, follow_up))) == "echo: lisbon"


# ---- the store is the bridge user's alone ---------------------------------------------------

OTHER_USER = 65534  # "nobody": another local user
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="acting as another local user needs root (setuid)")
STORE_FILES = ("bridge.sqlite3", "bridge.sqlite3-wal", "bridge.sqlite3-shm", "bridge.sqlite3.owner",
               "bridge.sqlite3.push-configs")


def as_other_user(action, *args):
    """``action(*args)`` in a forked process running as :data:`OTHER_USER`; what it returned
    (JSON), or the error it raised as ``{"error": ...}``."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: nothing but system calls, then out
        status = 0
        try:
            os.close(reader)
            os.setgroups([])
            os.setgid(OTHER_USER)
            os.setuid(OTHER_USER)
            try:
                result = action(*args)
            except Exception as exc:  # noqa: BLE001 - handed to the test
                result = {"error": f"{type(exc).__name__}: {exc}"}
            os.write(writer, json.dumps(result).encode())
        except BaseException:  # noqa: BLE001 - the child never returns into pytest
            status = 1
        finally:
            os._exit(status)
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        out = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert status == 0 and out, f"the child acting as another user failed (status {status})"
    return json.loads(out)


def what_can_be_read(paths: list[str], secrets: list[str]) -> dict:
    """Of ``paths``, those that could be opened for reading, and the ``secrets`` found in them."""
    readable, found = [], []
    for path in paths:
        try:
            with open(path, "rb") as file:
                data = file.read()
        except OSError:
            continue
        readable.append(path)
        found += [secret for secret in secrets if secret.encode() in data]
    return {"readable": readable, "found": found}


def plant_links(directory: str, targets: dict) -> dict:
    """Links ``directory/NAME`` -> ``TARGET``; what came of each."""
    done = {}
    for name, target in targets.items():
        try:
            os.symlink(target, os.path.join(directory, name))
            done[name] = "planted"
        except OSError as exc:
            done[name] = exc.strerror
    return done


def modes_under(root: Path) -> dict[str, str]:
    """``{path relative to root: "dir 0o700"}`` (or ``"file 0o600"``...) of ``root`` and everything in it."""
    paths = [root, *root.rglob("*")]
    return {str(path.relative_to(root)): f"{'dir' if path.is_dir() else 'file'} {oct(path.stat().st_mode & 0o777)}"
            for path in paths}


@pytest.fixture
def open_home():
    """A directory that other users may enter and read, as most home directories are (0755),
    outside pytest's own temporary directories (which they may not enter)."""
    home = Path(tempfile.mkdtemp(prefix="ovos_a2a_home_"))
    home.chmod(0o755)
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.mark.parametrize("umask", [0o000, 0o022])
def test_the_store_is_made_private_whatever_the_umask(umask, private_state):
    earlier = os.umask(umask)  # the bridge inherits it
    try:
        bridge = BridgeProcess("--workers", "2", default_state_dir=True)
    finally:
        os.umask(earlier)
    with bridge:
        assert answer(task_of(send(bridge.url, message("private")))) == "echo: private"
        store = private_state / "ovos_a2a_solver" / "bridge" / "echo-0"
        assert sorted(p.name for p in store.iterdir()) == sorted(STORE_FILES)  # -wal, -shm: while it runs
        modes = modes_under(private_state)
    assert modes == {".": "dir 0o700", "ovos_a2a_solver": "dir 0o700", "ovos_a2a_solver/bridge": "dir 0o700",
                     "ovos_a2a_solver/bridge/echo-0": "dir 0o700",
                     **{f"ovos_a2a_solver/bridge/echo-0/{name}": "file 0o600" for name in STORE_FILES}}, modes


@as_root
def test_another_local_user_reads_nothing_of_the_store(open_home):
    """A store in the default place under a home directory others may enter (0755, as most
    are): another user reads neither the messages nor the webhooks' secrets."""
    home = open_home
    state_home = home / ".local" / "state"
    marker, token = f"secret-{uuid.uuid4().hex}", f"token-{uuid.uuid4().hex}"
    with BridgeProcess("--workers", "2", default_state_dir=True,
                       env={"XDG_STATE_HOME": str(state_home), "OVOS_A2A_PUSH_ALLOW": "127.0.0.1"}) as bridge:
        task = task_of(send(bridge.url, message(f"ask:{marker}")))
        made = rpc(bridge.url, "CreateTaskPushNotificationConfig",
                   {"taskId": task["id"], "id": "hook", "url": "http://127.0.0.1:9/hook", "token": token})
        assert "result" in made, made
        store = state_home / "ovos_a2a_solver" / "bridge" / "echo-0"
        paths = [str(store / name) for name in STORE_FILES]
        assert all(Path(path).exists() for path in paths)
        assert what_can_be_read(paths, [marker, token])["found"], "the secrets are not in the store at all"
        seen = as_other_user(what_can_be_read, paths, [marker, token])
    assert seen == {"readable": [], "found": []}, seen


@as_root
def test_a_lock_held_by_another_users_process_is_named_not_the_dead_bridge_in_the_file(open_home):
    """A store an earlier version left open to others (0755, 0644), whose lock file names a
    bridge that has ended: another user holds a read lock on it. The bridge is refused, naming
    that user's process (not the ended bridge); the store is made private all the same, and
    once the holder is gone the lock is taken over."""
    home = open_home
    store = home / ".local" / "state" / "ovos_a2a_solver" / "bridge" / "echo-0"
    store.mkdir(parents=True)
    for each in (store, *store.parents):
        if each == home:
            break
        each.chmod(0o755)
    ended = subprocess.Popen(["true"])
    ended.wait()
    owner = store / "bridge.sqlite3.owner"
    owner.write_text(json.dumps({"persona": "echo", "url": "http://127.0.0.1:1/a2a", "pid": ended.pid}))
    owner.chmod(0o644)
    env = {"XDG_STATE_HOME": str(home / ".local" / "state")}
    with held_by_other_user(owner) as holder:
        refused = refusal(default_state_dir=True, env=env)
        assert refused.returncode == 2
        line = refused.stderr.strip().splitlines()[-1]
        assert f"in use by another process (process {holder} of user nobody), not the bridge the lock file names" \
            in line, line
        assert f"process {ended.pid}" not in line, line
        assert oct(owner.stat().st_mode & 0o777) == "0o600" and oct(store.stat().st_mode & 0o777) == "0o700"
        assert as_other_user(what_can_be_read, [str(owner)], [])["readable"] == []
    with BridgeProcess(default_state_dir=True, env=env) as bridge:
        assert json.loads(owner.read_text())["pid"] == bridge.proc.pid


def serve_refused(cli: Cli, state_dir: Path, *args: str) -> str:
    """The one line of ``ovos-a2a serve --state-dir state_dir`` refused at start (status 2)."""
    result = cli.run("serve", "--backend", "echo", "--port", "0", "--state-dir", str(state_dir), *args, timeout=30)
    assert result.returncode == 2, result.report
    assert "Traceback" not in result.stderr and "serving" not in result.stdout, result.report
    assert len(result.stderr_lines) == 1 and result.stderr_lines[0].startswith("ovos-a2a: "), result.report
    return result.stderr_lines[0]


@as_root
def test_a_state_dir_that_others_may_write_is_refused_and_their_links_are_not_followed(open_home):
    """``--state-dir`` in a shared temporary directory (1777, as /tmp), where another user
    planted links named as the bridge's side files, pointing at this user's files."""
    shared = open_home / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    victims = {name: open_home / f"precious-{n}" for n, name in
               enumerate(("bridge.sqlite3.owner", "bridge.sqlite3.push-configs", "bridge.sqlite3"))}
    for victim in victims.values():
        victim.write_text("this user's own")
    planted = as_other_user(plant_links, str(shared), {name: str(victim) for name, victim in victims.items()})
    assert set(planted.values()) == {"planted"}, planted
    line = serve_refused(Cli(open_home / "client"), shared, "--workers", "2")
    assert line == (f"ovos-a2a: cannot keep the task store in {shared}: other users may write to {shared} (mode "
                    f"1777); give the bridge a directory that is this user's alone with --state-dir DIR (one that "
                    f"does not exist yet is made so)"), line
    assert all(victim.read_text() == "this user's own" for victim in victims.values())


@as_root
def test_a_state_dir_of_another_user_is_refused(open_home):
    theirs = open_home / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, OTHER_USER, OTHER_USER)
    line = serve_refused(Cli(open_home / "client"), theirs)
    assert f"cannot keep the task store in {theirs}: {theirs} belongs to user nobody, not to root;" in line, line
    assert "--state-dir DIR" in line, line
    assert list(theirs.iterdir()) == []


@pytest.mark.parametrize("link", ["bridge.sqlite3.owner", "bridge.sqlite3.push-configs", "bridge.sqlite3"])
def test_a_link_in_the_place_of_a_store_file_is_not_followed(link, tmp_path):
    """However it got there: the file it points at is left as it is, and the bridge says why
    it does not start, in one line."""
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    precious = tmp_path / "precious"
    precious.write_text("this user's own")
    (store / link).symlink_to(precious)
    refused = refusal(("--workers", "2"), state_dir=store)
    assert refused.returncode != 0
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert f"{store / link} is a symbolic link, which is not followed" in lines[0], lines[0]
    assert precious.read_text() == "this user's own"


@contextlib.contextmanager
def held_by_other_user(path: Path):
    """A process of :data:`OTHER_USER` that holds a read ``flock`` on ``path``; its id."""
    ready_r, ready_w = os.pipe()
    stop_r, stop_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(ready_r)
            os.close(stop_w)
            os.setgroups([])
            os.setgid(OTHER_USER)
            os.setuid(OTHER_USER)
            descriptor = os.open(path, os.O_RDONLY)
            fcntl.flock(descriptor, fcntl.LOCK_SH)
            os.write(ready_w, b"held")
            os.read(stop_r, 1)  # until the test closes its end
        finally:
            os._exit(0)
    os.close(ready_w)
    os.close(stop_r)
    try:
        with os.fdopen(ready_r, "rb") as ready:
            assert ready.read(4) == b"held", "the other user's process could not lock the file"
        yield pid
    finally:
        os.close(stop_w)
        os.waitpid(pid, 0)
