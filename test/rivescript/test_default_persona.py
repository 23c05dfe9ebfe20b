"""The embedded default persona's engine (ovos-a2a-rivescript): one memory per conversation,
bounded, idle-expiring, durable, never stopped by its state file; and the same through a real
bridge over A2A."""
import contextlib
import json
import logging
import sqlite3
from pathlib import Path

import pytest
from ovos_bus_client.session import Session
from ovos_persona import Persona
from ovos_plugin_manager.templates.agents import AgentMessage, MessageRole

from ovos_a2a_solver import A2AClient, ConversationStore
from ovos_a2a_solver.bridge.backends.persona_file import DEFAULT_PERSONA_FILE
from ovos_a2a_solver.rivescript.engine import MAX_INPUT_CHARS, RiveScriptChatEngine, default_state_file

from support.network import free_port
from support.bridge_in_process import InProcessBridge

# the brain's exact answers (deterministic: no random alternatives)
MET_ZED = "Nice to meet you, Zed! I will remember your name in this conversation."
NAME_IS_ZED = "Your name is Zed."
NAME_UNKNOWN = "I do not know your name yet. Tell me by saying: my name is, then your name."
NOTE_KEPT = "All right, I will remember that the keys are in the drawer."
NOTE_RECALLED = "You asked me to remember that the keys are in the drawer."
NO_NOTE = "You have not asked me to remember anything yet."


pytestmark = pytest.mark.usefixtures("private_state")  # every test has its own XDG state directory


class Clock:
    """A clock the test moves by hand (seconds since the epoch, like time.time)."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def ask(engine, text, session_id):
    return engine.continue_chat([AgentMessage(role=MessageRole.USER, content=text)], session_id=session_id).content


def stored_sessions(path: Path) -> set:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return {row[0] for row in db.execute("SELECT session_id FROM sessions")}


# ---- the engine --------------------------------------------------------------------------

def test_two_conversations_do_not_share_memory():
    engine = RiveScriptChatEngine({})
    assert ask(engine, "my name is Zed", "first") == MET_ZED
    assert ask(engine, "remember the keys are in the drawer", "first") == NOTE_KEPT
    assert ask(engine, "what is my name?", "second") == NAME_UNKNOWN
    assert ask(engine, "what did I tell you?", "second") == NO_NOTE
    assert ask(engine, "What's my name?", "first") == NAME_IS_ZED
    assert ask(engine, "what did I tell you?", "first") == NOTE_RECALLED


def test_stream_sentences_gives_whole_sentences_in_order():
    engine = RiveScriptChatEngine({})
    said = list(engine.stream_sentences([AgentMessage(role=MessageRole.USER, content="how are you?")], "s"))
    assert said == ["I am well, thanks for asking.",
                    "I run entirely on this machine, so I never have a bad connection."]
    assert list(engine.stream_sentences([AgentMessage(role=MessageRole.USER, content="my name is Zed")], "s")) \
        == ["Nice to meet you, Zed!", "I will remember your name in this conversation."]


def test_a_long_message_is_cut_so_memory_stays_small():
    engine = RiveScriptChatEngine({})
    answer = ask(engine, "remember " + "very " * 1000 + "long", "s")
    assert answer.startswith("All right, I will remember that very very") and "long" not in answer
    assert len(json.dumps(engine.memory.get_any("s"))) < 5 * MAX_INPUT_CHARS


def test_only_the_newest_user_message_is_answered():
    engine = RiveScriptChatEngine({})
    history = [AgentMessage(role=MessageRole.USER, content="my name is Zed"),
               AgentMessage(role=MessageRole.ASSISTANT, content=MET_ZED),
               AgentMessage(role=MessageRole.USER, content="what is my name")]
    assert engine.continue_chat(history, session_id="s").content == NAME_UNKNOWN  # memory is the engine's own
    with pytest.raises(ValueError):
        engine.continue_chat([AgentMessage(role=MessageRole.ASSISTANT, content="hi")], session_id="s")


def test_the_least_recently_used_conversation_is_forgotten_first(private_state):
    clock = Clock()
    engine = RiveScriptChatEngine({"max_conversations": 2}, clock=clock)
    for session in ("a", "b"):
        ask(engine, "my name is Zed", session)
        clock.now += 1
    ask(engine, "hello", "a")  # a is now more recent than b
    clock.now += 1
    ask(engine, "hello", "c")  # a third conversation: b goes
    assert "b" not in engine.memory and len(engine.memory) == 2
    assert stored_sessions(default_state_file()) == {"a", "c"}
    assert ask(engine, "what is my name", "a") == NAME_IS_ZED
    assert ask(engine, "what is my name", "b") == NAME_UNKNOWN


def test_an_idle_conversation_is_forgotten_in_memory_and_on_disk():
    clock = Clock()
    engine = RiveScriptChatEngine({"conversation_ttl": 60}, clock=clock)
    ask(engine, "my name is Zed", "idle")
    ask(engine, "my name is Zed", "busy")
    clock.now += 59
    assert ask(engine, "what is my name", "busy") == NAME_IS_ZED
    clock.now += 2  # "idle" unused for 61 s, "busy" for 2 s
    assert ask(engine, "hello", "other")
    assert "idle" not in engine.memory and "busy" in engine.memory
    assert stored_sessions(default_state_file()) == {"busy", "other"}
    assert ask(engine, "what is my name", "idle") == NAME_UNKNOWN
    assert ask(RiveScriptChatEngine({"conversation_ttl": 60}, clock=Clock(clock.now + 61)),
               "what is my name", "busy") == NAME_UNKNOWN  # expired while the bridge was down


def test_memory_survives_a_new_engine_on_the_same_file(tmp_path):
    config = {"state_file": str(tmp_path / "brain" / "sessions.sqlite")}
    first = RiveScriptChatEngine(config)
    ask(first, "my name is Zed", "kept")
    ask(first, "remember the keys are in the drawer", "kept")
    first.shutdown()
    second = RiveScriptChatEngine(config)
    assert ask(second, "what is my name", "kept") == NAME_IS_ZED
    assert ask(second, "what did I tell you", "kept") == NOTE_RECALLED
    assert ask(second, "what is my name", "other") == NAME_UNKNOWN
    assert (tmp_path / "brain" / "sessions.sqlite").stat().st_mode & 0o077 == 0  # private to the user


def test_processes_opening_a_new_state_file_at_the_same_moment_all_keep_it(tmp_path):
    """Workers open one state file together; the switch to WAL then finds the file busy, and
    SQLite says "locked" without waiting: no process may give up the file (RAM only) for that."""
    import multiprocessing

    from ovos_a2a_solver.rivescript.session_file import SessionFile

    context = multiprocessing.get_context("fork")
    for attempt in range(25):
        path = tmp_path / f"attempt-{attempt}" / "sessions.sqlite"
        start = context.Barrier(3)
        opened = context.Queue()

        def open_it():
            start.wait(10)
            opened.put(SessionFile(path).enabled)

        workers = [context.Process(target=open_it) for _ in range(3)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(30)
            assert worker.exitcode == 0
        assert [opened.get(timeout=10) for _ in workers] == [True, True, True], f"attempt {attempt}"


def test_a_damaged_state_file_is_moved_aside_and_answering_goes_on(caplog):
    path = default_state_file()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not a database, " * 200)
    with caplog.at_level(logging.WARNING, logger="ovos_a2a_solver"):
        engine = RiveScriptChatEngine({})
    assert "damaged" in caplog.text and str(path) in caplog.text
    (aside,) = path.parent.glob(path.name + ".corrupt-*")
    assert aside.read_bytes().startswith(b"this is not a database")
    assert ask(engine, "my name is Zed", "s") == MET_ZED
    assert ask(RiveScriptChatEngine({}), "what is my name", "s") == NAME_IS_ZED  # the fresh file works


def test_an_unusable_state_file_keeps_memory_in_ram(tmp_path, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with caplog.at_level(logging.WARNING, logger="ovos_a2a_solver"):
        engine = RiveScriptChatEngine({"state_file": str(blocker / "sessions.sqlite")})
    assert "in memory only" in caplog.text
    assert not engine.memory.session_file.enabled
    assert ask(engine, "my name is Zed", "s") == MET_ZED
    assert ask(engine, "what is my name", "s") == NAME_IS_ZED


def test_an_unreadable_session_row_starts_that_conversation_afresh(caplog):
    engine = RiveScriptChatEngine({})
    ask(engine, "my name is Zed", "broken")
    ask(engine, "my name is Zed", "fine")
    engine.shutdown()
    with contextlib.closing(sqlite3.connect(default_state_file())) as db, db:
        db.execute("UPDATE sessions SET variables = '{not json' WHERE session_id = 'broken'")
    engine = RiveScriptChatEngine({})
    with caplog.at_level(logging.WARNING, logger="ovos_a2a_solver"):
        assert ask(engine, "what is my name", "broken") == NAME_UNKNOWN
    assert "unreadable" in caplog.text
    assert ask(engine, "what is my name", "fine") == NAME_IS_ZED


def test_without_persistence_nothing_is_written(private_state):
    engine = RiveScriptChatEngine({"persist_conversations": False})
    ask(engine, "my name is Zed", "s")
    assert ask(engine, "what is my name", "s") == NAME_IS_ZED
    assert not private_state.exists()
    assert ask(RiveScriptChatEngine({"persist_conversations": False}), "what is my name", "s") == NAME_UNKNOWN


@pytest.mark.parametrize("config, key", [({"max_conversations": 0}, "max_conversations"),
                                         ({"max_conversations": 2.5}, "max_conversations"),
                                         ({"conversation_ttl": True}, "conversation_ttl"),
                                         ({"persona": " "}, "persona"),
                                         ({"conversation_ttl": "soon"}, "conversation_ttl"),
                                         ({"persist_conversations": "maybe"}, "persist_conversations"),
                                         ({"state_file": 3}, "state_file"),
                                         ({"brain": "/nonexistent/brain"}, "brain")])
def test_a_bad_setting_stops_the_engine_with_its_name(config, key):
    with pytest.raises(ValueError, match=key):
        RiveScriptChatEngine(config)


def test_the_settings_table_of_the_bridge_doc_is_the_engines_settings():
    from ovos_a2a_solver.rivescript.engine import settings_table
    from support import REPO_ROOT, load_tool

    tables = load_tool("settings_tables")
    written = tables.written_table(REPO_ROOT / "docs" / "bridge.md", tables.RIVESCRIPT)
    assert written == settings_table(), settings_table()


def test_a_brain_of_ones_own_replaces_the_embedded_one(tmp_path):
    brain = tmp_path / "brain"
    brain.mkdir()
    with pytest.raises(ValueError, match="no RiveScript replies"):
        RiveScriptChatEngine({"brain": str(brain)})
    (brain / "parrot.rive").write_text("! version = 2.0\n\n+ *\n- <set said=<star>>You said <star>.\n")
    engine = RiveScriptChatEngine({"brain": str(brain)})
    assert ask(engine, "my name is Zed", "s") == "You said my name is zed."


def test_the_embedded_persona_loads_the_engine_through_opm():
    config = json.loads(DEFAULT_PERSONA_FILE.read_text())
    assert config["handlers"] == ["ovos-a2a-rivescript", "ovos-solver-failure-plugin"]
    persona = Persona(config["name"], config)
    assert isinstance(persona.solvers.loaded_modules["ovos-a2a-rivescript"], RiveScriptChatEngine)

    def say(text, session):
        return " ".join(persona.stream([AgentMessage(role=MessageRole.USER, content=text)], Session(session)))

    assert say("my name is Zed", "kitchen") == MET_ZED
    assert say("what is my name", "garage") == NAME_UNKNOWN
    assert say("what is my name", "kitchen") == NAME_IS_ZED


# ---- end to end: the bridge over A2A -----------------------------------------------------

def test_the_bridge_keeps_each_conversation_to_itself(private_state):
    with InProcessBridge(backend="persona") as bridge:  # its memory in private_state
        with A2AClient(bridge.url, timeout=30) as client:
            assert client.send_task("my name is Zed", session_id="zed") == MET_ZED
            assert client.send_task("what is my name") == NAME_UNKNOWN  # a fresh context (no contextId)
            assert client.send_task("what is my name", session_id="zed") == NAME_IS_ZED
            assert client.send_task("what is my name", session_id="someone else") == NAME_UNKNOWN


def test_a_conversation_survives_a_restart_of_the_bridge(tmp_path, private_state):
    port, state_dir = free_port(), tmp_path / "bridge-state"
    conversations = tmp_path / "client-conversations.json"
    with InProcessBridge("--port", str(port), backend="persona", state_dir=state_dir) as first:
        with A2AClient(first.url, timeout=30, conversations=ConversationStore(conversations)) as client:
            assert client.send_task("my name is Zed", session_id="zed") == MET_ZED
            context_id = client.conversation("zed").context_id
    with InProcessBridge("--port", str(port), backend="persona", state_dir=state_dir) as second:
        with A2AClient(second.url, timeout=30, conversations=ConversationStore(conversations)) as client:
            assert client.send_task("what is my name", session_id="zed") == NAME_IS_ZED
            assert client.conversation("zed").context_id == context_id
