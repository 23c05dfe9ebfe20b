"""The per-device session -> (contextId, taskId) map: durable, bounded, idle-expiring, never fatal."""
import json
import subprocess
import sys
import textwrap

from ovos_a2a_solver.conversations.conversation_store import Conversation, ConversationStore, default_state_path

from support.clock import ManualClock


def test_survives_a_new_store_on_the_same_file(tmp_path):
    path = tmp_path / "conv.json"
    ConversationStore(path).remember("agent-a", "kitchen", "ctx-1", "task-1")
    assert ConversationStore(path).get("agent-a", "kitchen") == Conversation("ctx-1", "task-1")


def test_agent_keys_and_sessions_never_collide(tmp_path):
    store = ConversationStore(tmp_path / "conv.json")
    store.remember("agent-a", "default", "ctx-a")
    store.remember("agent-b", "default", "ctx-b")
    store.remember("agent-a", "other", "ctx-c")
    assert store.get("agent-a", "default").context_id == "ctx-a"
    assert store.get("agent-b", "default").context_id == "ctx-b"
    assert store.get("agent-a", "other").context_id == "ctx-c"


def test_never_stores_an_empty_context(tmp_path):
    store = ConversationStore(tmp_path / "conv.json")
    store.remember("a", "s", "")
    assert store.get("a", "s") is None


def test_least_recently_used_conversations_go_first(tmp_path):
    clock = ManualClock()
    store = ConversationStore(tmp_path / "conv.json", max_conversations=3, clock=clock)
    for n in range(5):
        store.remember("a", f"s{n}", f"ctx{n}")
        clock.advance(0.01)
    assert sorted(store.sessions("a")) == ["s2", "s3", "s4"]
    assert sorted(ConversationStore(tmp_path / "conv.json").sessions("a")) == ["s2", "s3", "s4"]


def test_idle_conversations_expire(tmp_path):
    clock = ManualClock()
    store = ConversationStore(tmp_path / "conv.json", idle_ttl=0.2, clock=clock)
    store.remember("a", "s", "ctx")
    clock.advance(0.1)
    assert store.get("a", "s") is not None  # used 0.1 s ago
    clock.advance(0.2)
    assert store.get("a", "s") is None  # idle for 0.3 s


def test_a_refused_context_is_never_adopted_again(tmp_path):
    store = ConversationStore(tmp_path / "conv.json")
    store.remember("a", "s", "ctx-old", "task")
    store.forget("a", "s", refused=True)
    assert store.get("a", "s") is None
    store.remember("a", "s", "ctx-old")  # e.g. a late answer naming the refused context
    assert store.get("a", "s") is None
    store.remember("a", "s", "ctx-new")
    assert store.get("a", "s").context_id == "ctx-new"


def test_forget_task_keeps_the_context(tmp_path):
    store = ConversationStore(tmp_path / "conv.json")
    store.remember("a", "s", "ctx", "task")
    store.forget_task("a", "s")
    assert store.get("a", "s") == Conversation("ctx", None)


def test_a_corrupt_file_is_moved_aside_and_replaced(tmp_path, caplog):
    path = tmp_path / "conv.json"
    path.write_text("{ not json")
    store = ConversationStore(path)
    assert store.get("a", "s") is None
    assert "unreadable" in caplog.text
    (aside,) = [p for p in tmp_path.iterdir() if p.name.startswith("conv.json.corrupt-")]
    assert aside.read_text() == "{ not json"  # kept as it was, for a person to look at
    store.remember("a", "s", "ctx")
    assert json.loads(path.read_text())["agents"]["a"]["sessions"]["s"]["context_id"] == "ctx"


def test_a_file_with_the_wrong_shape_is_also_replaced(tmp_path):
    path = tmp_path / "conv.json"
    path.write_text(json.dumps({"version": 1, "agents": {"a": {"sessions": {"s": {"context_id": 5}}}}}))
    store = ConversationStore(path)
    assert store.get("a", "s") is None  # malformed entry dropped, not a crash
    path.write_text("[]")
    assert ConversationStore(path).get("a", "s") is None


def test_writes_are_atomic_and_private(tmp_path):
    path = tmp_path / "state" / "conv.json"
    store = ConversationStore(path)
    for n in range(20):
        store.remember("a", f"s{n}", f"ctx{n}")
    leftovers = [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_two_processes_sharing_the_file_keep_each_others_sessions(tmp_path):
    path = tmp_path / "conv.json"
    script = textwrap.dedent(f"""
        import sys
        from ovos_a2a_solver.conversations.conversation_store import ConversationStore
        store = ConversationStore({str(path)!r})
        for n in range(30):
            store.remember("agent", sys.argv[1] + str(n), "ctx")
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, name]) for name in ("p", "q")]
    assert all(p.wait(timeout=60) == 0 for p in procs)
    assert len(ConversationStore(path).sessions("agent")) == 60


def test_default_path_follows_xdg_state_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert default_state_path() == tmp_path / "ovos_a2a_solver" / "conversations.json"
