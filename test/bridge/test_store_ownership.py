"""Two bridges never share tasks: each has its own default store, a store held by a live
bridge is refused to a second one, and a persona never relays to the bridge that serves it."""
import json
import socket
from pathlib import Path

import pytest

from support import REPO_ROOT
from support.bridge_process import BridgeProcess, BridgeStartError
from support.bridge_rpc import answer, get_task, message, send, task_of
from support.personas import relay_persona


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


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
    with BridgeProcess(state_dir=store) as echo:  # persona "echo"
        asking = task_of(send(echo.url, message("ask:which city?")))
        assert asking["status"]["state"] == "TASK_STATE_INPUT_REQUIRED" and asking["metadata"]["persona"] == "echo"
    follow_up = message("lisbon", task_id=asking["id"], context_id=asking["contextId"])
    with BridgeProcess(state_dir=store, backend="scenarios") as other:  # persona "scenarios"
        assert task_of(get_task(other.url, asking["id"]))["id"] == asking["id"]  # read: yes
        refused = send(other.url, follow_up)["error"]
        assert refused["code"] == -32602, refused
        assert 'begun by the persona "echo", and this bridge serves "scenarios"' in refused["message"], refused
        assert task_of(get_task(other.url, asking["id"]))["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    with BridgeProcess(state_dir=store) as echo:
        assert answer(task_of(send(echo.url, follow_up))) == "echo: lisbon"
