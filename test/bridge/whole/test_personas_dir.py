"""Several personas from one process (--personas-dir), as ovos-persona-server serves a
directory: each at its own path, with its own card, memory and tasks."""
import json

import httpx
import pytest

from ovos_a2a_solver import A2AClient
from ovos_a2a_solver.bridge.backends.persona_file import DEFAULT_PERSONA_FILE

from support.bridge_in_process import InProcessBridge
from support.bridge_process import BridgeProcess, BridgeStartError
from support.bridge_rpc import answer, get_task, message, send, task_of
from support.cli_run import Cli


@pytest.fixture
def personas(tmp_path, agent):
    """alice: the embedded offline persona under another name; bob: a relay to the test agent."""
    directory = tmp_path / "personas"
    directory.mkdir()
    alice = json.loads(DEFAULT_PERSONA_FILE.read_text())
    alice["name"] = "alice"
    (directory / "alice.json").write_text(json.dumps(alice))
    (directory / "bob.json").write_text(json.dumps({"name": "bob", "handlers": ["ovos-a2a-solver"],
                                                     "ovos-a2a-solver": {"agent_url": agent.agent("echo")}}))
    return directory


def test_each_persona_of_a_directory_has_its_own_path_card_and_tasks(personas, private_state, tmp_path):
    with BridgeProcess("--personas-dir", str(personas), backend="persona", default_state_dir=True) as bridge:
        root = bridge.root
        lines = bridge.stdout_text().splitlines()
        assert f'ovos-a2a: serving "alice" at {root}/a2a/alice (card {root}/a2a/alice/.well-known/agent-card.json)' \
            in lines, lines
        assert f'ovos-a2a: serving "bob" at {root}/a2a/bob (card {root}/a2a/bob/.well-known/agent-card.json)' \
            in lines, lines
        with A2AClient(f"{root}/a2a/bob") as bob, A2AClient(f"{root}/a2a/alice") as alice:
            assert bob.fetch_agent_card().name == "bob" and alice.fetch_agent_card().name == "alice"
            assert bob.send_task("hi", session_id="s").endswith("]: hi")  # the relay's echo agent
            assert alice.send_task("my name is Ada", session_id="s").strip()
            assert "ada" in alice.send_task("what is my name", session_id="s").lower()
        task = task_of(send(f"{root}/a2a/bob", message("hello bob")))
        assert get_task(f"{root}/a2a/alice", task["id"]).get("error", {}).get("code") == -32001  # not alice's
        assert task_of(get_task(f"{root}/a2a/bob", task["id"]))["id"] == task["id"]
        health = httpx.get(f"{root}/health", timeout=10).json()
        assert health["ok"] is True and [p["persona"] for p in health["personas"]] == ["alice", "bob"], health
    stores = sorted(str(p.relative_to(private_state)) for p in private_state.rglob("bridge.sqlite3"))
    assert stores == ["ovos_a2a_solver/bridge/alice-0/bridge.sqlite3",
                      "ovos_a2a_solver/bridge/bob-0/bridge.sqlite3"], stores


def test_each_persona_of_a_directory_remembers_on_its_own_in_one_context(tmp_path, private_state):
    """kitchen and office, two copies of the embedded offline persona: a name told to kitchen
    is not known to office in the same contextId, and kitchen still knows it."""
    directory = tmp_path / "personas"
    directory.mkdir()
    for name in ("kitchen", "office"):
        persona = json.loads(DEFAULT_PERSONA_FILE.read_text())
        persona["name"] = name
        (directory / f"{name}.json").write_text(json.dumps(persona))
    with InProcessBridge("--personas-dir", str(directory), backend="persona", default_state_dir=True) as bridge:
        kitchen, office = f"{bridge.root}/a2a/kitchen", f"{bridge.root}/a2a/office"
        told = task_of(send(kitchen, message("my name is Ada", context_id="ctx-shared")))
        assert "ada" in answer(told).lower(), told
        asked = task_of(send(office, message("what is my name", context_id="ctx-shared")))
        assert "do not know your name" in answer(asked), asked
        again = task_of(send(kitchen, message("what is my name", context_id="ctx-shared")))
        assert "ada" in answer(again).lower(), again


def test_each_persona_card_is_also_at_the_well_known_path_named_by_its_id(personas, tmp_path):
    """BASE/.well-known/NAME/agent-card.json: NAME's own card, as each A2A version asks for it,
    and no card for a name the directory does not hold."""
    with InProcessBridge("--personas-dir", str(personas), backend="persona", state_dir=tmp_path / "state") as bridge:
        base = f"{bridge.root}/a2a"
        for name in ("alice", "bob"):
            for version in ({"A2A-Version": "1.0"}, {}):
                by_id = httpx.get(f"{base}/.well-known/{name}/agent-card.json", headers=version, timeout=10)
                own = httpx.get(f"{base}/{name}/.well-known/agent-card.json", headers=version, timeout=10)
                assert by_id.status_code == 200, by_id.text
                assert by_id.json() == own.json() and by_id.json()["name"] == name, by_id.json()
                assert by_id.headers["etag"] == own.headers["etag"]
        assert httpx.get(f"{base}/.well-known/carol/agent-card.json", timeout=10).status_code == 404


@pytest.mark.parametrize("extra, said", [
    (("--persona", "x.json"), "give --personas-dir (OVOS_A2A_PERSONAS_DIR) or --persona"),
    (("--grpc-port", "0"), "cannot be combined with --grpc-port"),
    (("--workers", "2"), "cannot be combined with --workers"),
])
def test_a_personas_directory_refuses_what_it_cannot_serve_in_one_line(personas, tmp_path, extra, said):
    result = Cli(tmp_path / "state").run("serve", "--personas-dir", str(personas), "--port", "0", *extra)
    assert result.returncode == 2, result.report
    assert said in result.stderr and len(result.stderr_lines) == 1, result.report


def test_an_empty_directory_or_two_personas_of_one_name_are_refused(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    twins = tmp_path / "twins"
    twins.mkdir()
    for file in ("a.json", "b.json"):
        (twins / file).write_text(json.dumps({"name": "Same Name", "handlers": ["ovos-a2a-rivescript"]}))
    for directory, said in ((empty, "holds no persona file"), (twins, "a.json and b.json both name a persona")):
        with pytest.raises(BridgeStartError) as refused:
            BridgeProcess("--personas-dir", str(directory), backend="persona").stop()
        assert refused.value.returncode == 2 and said in refused.value.stderr, refused.value.stderr
