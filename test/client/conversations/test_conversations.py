"""Sessions and remote conversations: contextIds come from the agent, continuations, resets."""
import subprocess
import sys
import textwrap

import pytest
from a2a.utils.errors import A2AError, InvalidParamsError, TaskNotFoundError, UnsupportedOperationError
from ovos_plugin_manager.templates.agents import AgentMessage, MessageRole

from ovos_a2a_solver import A2AChatEngine, A2AClient, ConversationStore, RetryPolicy

from support.chat import context_of, user, from_user


def test_first_message_goes_without_context_and_the_agents_value_is_kept(agent):
    with A2AClient(agent.agent("refuse")) as client:  # refuses any context it did not issue
        first = client.send_task("one", session_id="s")
        assert client.conversation("s").context_id == context_of(first)
        second = client.send_task("two", session_id="s")
    assert context_of(second) == context_of(first)


def test_two_sessions_never_share_a_conversation(agent):
    with A2AClient(agent.agent("echo")) as client:
        a = client.send_task("a", session_id="kitchen")
        b = client.send_task("b", session_id="bedroom")
        a2 = client.send_task("a2", session_id="kitchen")
    assert context_of(a) != context_of(b)
    assert context_of(a2) == context_of(a)


def test_without_a_session_each_call_is_its_own_conversation(agent):
    with A2AClient(agent.agent("echo")) as client:
        assert context_of(client.send_task("x")) != context_of(client.send_task("y"))


def test_only_the_newest_user_message_is_sent(agent, tmp_path):
    engine = A2AChatEngine({"agent_url": agent.agent("echo"), "state_file": str(tmp_path / "c.json")})
    history = [AgentMessage(role=MessageRole.SYSTEM, content="be nice"), from_user("first question"),
               AgentMessage(role=MessageRole.ASSISTANT, content="first answer"), from_user("second question")]
    answer = engine.continue_chat(history, session_id="s")
    assert answer.role == MessageRole.ASSISTANT
    assert answer.content.endswith("]: second question")


def test_two_engines_on_one_device_with_different_namespaces_do_not_collide(agent, tmp_path):
    state = str(tmp_path / "c.json")
    one = A2AChatEngine({"agent_url": agent.agent("echo"), "state_file": state, "namespace": "one"})
    two = A2AChatEngine({"agent_url": agent.agent("echo"), "state_file": state, "namespace": "two"})
    a = one.continue_chat(user("a"), session_id="default").content
    b = two.continue_chat(user("b"), session_id="default").content
    assert context_of(a) != context_of(b)
    assert context_of(one.continue_chat(user("c"), session_id="default").content) == context_of(a)


def test_the_same_session_continues_after_a_process_restart(agent, tmp_path):
    script = textwrap.dedent("""
        import sys
        from ovos_plugin_manager.templates.agents import AgentMessage, MessageRole
        from ovos_a2a_solver import A2AChatEngine
        engine = A2AChatEngine({"agent_url": sys.argv[1], "state_file": sys.argv[2]})
        print(engine.continue_chat([AgentMessage(role=MessageRole.USER, content=sys.argv[3])],
                                   session_id="kitchen").content)
    """)
    run = lambda text: subprocess.run([sys.executable, "-c", script, agent.agent("memory"),
                                       str(tmp_path / "c.json"), text],
                                      capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    assert run("remember gold") == "ok, I will remember gold"
    assert run("recall") == "you told me gold"


def test_input_required_question_is_answered_by_the_next_utterance(agent):
    with A2AClient(agent.agent("ask")) as client:
        assert client.send_task("ask", session_id="s") == "which city?"
        waiting = client.conversation("s")
        assert waiting.task_id
        answer = client.send_task("lisbon", session_id="s")
        assert answer == f"continued[{waiting.context_id}]: lisbon"
        assert client.conversation("s").task_id is None
        assert client.send_task("ask", session_id="s") == "which city?"  # a new task, same context
        assert client.conversation("s").context_id == waiting.context_id


def test_auth_required_is_continued_the_same_way(agent):
    with A2AClient(agent.agent("auth"), streaming=True) as client:
        assert client.send_task("book", session_id="s") == "please sign in"
        ctx = client.conversation("s").context_id
        assert client.send_task("token", session_id="s") == f"signed in[{ctx}]: token"


def test_a_task_finished_out_of_band_raises_once_then_the_context_goes_on(agent):
    with A2AClient(agent.agent("memory")) as client:
        assert client.send_task("remember gold", session_id="s") == "ok, I will remember gold"
        assert client.send_task("login", session_id="s") == "password?"
        ctx = client.conversation("s").context_id
        agent.finish()
        with pytest.raises(UnsupportedOperationError):
            client.send_task("hunter2", session_id="s")
        assert client.conversation("s").context_id == ctx
        assert client.send_task("recall", session_id="s") == "you told me gold"


# a 404 without an A2A error is taken for an interface that moved: the card is read again and
# the message sent once more, which is refused again
@pytest.mark.parametrize("status, refusals", [(500, 1), (400, 1), (404, 2)])
def test_a_continuation_refused_for_good_lets_go_of_the_task_and_the_context_goes_on(agent, status, refusals):
    """An agent that answers a continuation with an error that another try would not change
    (here an HTTP status that is not transient): it fails once, and the session's next
    utterance starts a new task in the same context, instead of being sent as the same
    failing continuation until the conversation expires."""
    with A2AClient(agent.agent("memory")) as client:
        assert client.send_task("remember copper", session_id="s") == "ok, I will remember copper"
        assert client.send_task("login", session_id="s") == "password?"
        ctx = client.conversation("s").context_id
        agent.flaky(refusals, status=status, agent="memory")
        with pytest.raises(A2AError):
            client.send_task("hunter2", session_id="s")
        assert client.conversation("s").context_id == ctx and client.conversation("s").task_id is None
        assert client.send_task("recall", session_id="s") == "you told me copper"


@pytest.mark.parametrize("agent_name, streaming", [
    ("memory", True),                # A2A 1.0, as the a2a-sdk answers
    ("memory-v03-rest", False),      # the a2a-sdk's own 0.3 HTTP+JSON server, read by its 0.3 REST transport
    ("memory-v03-rest-js", False),   # 404 {"code": -32001, "message"}, as the JS SDK answers
    ("memory-v03-js", True),         # an SSE "event: error" carrying the JSON-RPC error, as the JS SDK streams it
])
def test_a_task_the_agent_forgot_raises_once_then_a_new_task_starts_in_the_context(agent, agent_name, streaming):
    """An agent restarted between its question and the reply forgot the task: however the
    peer words it, the reply fails once with TaskNotFoundError (not a method not found, which
    would send the message again to a card read again), and the next utterance starts a new
    task in the same context."""
    with A2AClient(agent.agent(agent_name), streaming=streaming) as client:
        assert client.send_task("remember tin", session_id="s") == "ok, I will remember tin"
        assert client.send_task("login", session_id="s") == "password?"
        ctx = client.conversation("s").context_id
        agent.forget()
        with pytest.raises(TaskNotFoundError):
            client.send_task("hunter2", session_id="s")
        assert client.conversation("s").context_id == ctx and client.conversation("s").task_id is None
        assert client.send_task("recall", session_id="s") == "you told me tin"


def test_a_404_that_says_task_not_found_is_not_taken_for_an_interface_that_moved(agent):
    """A2A 1.0 HTTP+JSON answers a forgotten task with 404 and the reason TASK_NOT_FOUND: that
    is the agent's answer, not a sign that the interface moved, so the card is not read again
    and the message is not sent a second time."""
    with A2AClient(agent.agent("memory-rest")) as client:
        assert client.send_task("login", session_id="s") == "password?"
        agent.forget()
        fetches = agent.stats()["card_fetches"]["memory-rest"]
        with pytest.raises(TaskNotFoundError):
            client.send_task("hunter2", session_id="s")
        assert agent.stats()["card_fetches"]["memory-rest"] == fetches
        posts = [h for h in agent.headers() if h["path"].startswith("/memory-rest/rest/message")]
        assert len(posts) == 2, posts  # "login", and "hunter2" once


def test_a_continuation_that_failed_for_now_keeps_the_task(agent):
    """A transient refusal (503, after the client's own retries) keeps the open task: the
    agent may still hold it, and the next utterance continues it."""
    with A2AClient(agent.agent("memory"), retries=RetryPolicy(max_retries=0)) as client:
        assert client.send_task("login", session_id="s") == "password?"
        task_id = client.conversation("s").task_id
        agent.flaky(1, status=503, agent="memory")
        with pytest.raises(A2AError):
            client.send_task("hunter2", session_id="s")
        assert client.conversation("s").task_id == task_id


@pytest.mark.parametrize("status", [503, 500])
def test_a_continuation_that_failed_twice_lets_go_of_the_task(agent, status):
    """A peer that fails every continuation of a task it cannot say it forgot (503, or 500,
    each time): the second failure in a row lets go of the task at the latest, and the next
    utterance starts a new task in the same context."""
    with A2AClient(agent.agent("memory"), retries=RetryPolicy(max_retries=0)) as client:
        assert client.send_task("remember zinc", session_id="s") == "ok, I will remember zinc"
        assert client.send_task("login", session_id="s") == "password?"
        ctx, task_id = client.conversation("s").context_id, client.conversation("s").task_id
        agent.flaky(1, status=status, agent="memory")
        with pytest.raises(A2AError):
            client.send_task("hunter2", session_id="s")
        if status == 503:  # for now: the agent may still hold the task
            assert client.conversation("s").task_id == task_id
        agent.flaky(1, status=status, agent="memory")
        with pytest.raises(A2AError):
            client.send_task("hunter2", session_id="s")
        assert client.conversation("s").context_id == ctx and client.conversation("s").task_id is None
        assert client.send_task("recall", session_id="s") == "you told me zinc"


def test_a_refused_conversation_raises_once_and_is_never_sent_again(agent, tmp_path):
    store = ConversationStore(tmp_path / "c.json")
    with A2AClient(agent.agent("refuse"), conversations=store) as client:
        first = client.send_task("one", session_id="s")
        agent.expire()
        with pytest.raises(InvalidParamsError):
            client.send_task("two", session_id="s")
        third = client.send_task("three", session_id="s")
        fourth = client.send_task("four", session_id="s")
    assert context_of(third) != context_of(first)
    assert context_of(fourth) == context_of(third)


@pytest.mark.parametrize("error, named_task, effect", [
    (TaskNotFoundError(), True, "forget_task"),
    (UnsupportedOperationError(), True, "forget_task"),
    (TaskNotFoundError(), False, "new_conversation"),
    (UnsupportedOperationError(), False, "new_conversation"),
    (InvalidParamsError(), True, "new_conversation"),
    (InvalidParamsError(), False, "new_conversation"),
])
def test_the_effect_table(error, named_task, effect):
    from ovos_a2a_solver.conversations.effects import effect_of_error
    assert effect_of_error(error, named_task=named_task, named_context=True).value == effect
    assert effect_of_error(error, named_task=False, named_context=False).value == "keep"


def assistant(text):
    return AgentMessage(role=MessageRole.ASSISTANT, content=text)


@pytest.mark.parametrize("messages", [
    [from_user("hello"), assistant("echo: hello")],
    [from_user("hello"), assistant("echo: hello"), from_user("   ")],
    [],
], ids=["answered", "blank-after-answer", "no-messages"])
def test_nothing_to_answer_gives_nothing_and_does_not_call_the_agent(agent, tmp_path, messages):
    engine = A2AChatEngine({"agent_url": agent.agent("echo"), "state_file": str(tmp_path / "c.json")})
    before = agent.stats()["messages"]["echo"]
    assert engine.continue_chat(messages, session_id="s").content == ""
    assert list(engine.stream_tokens(messages, session_id="s")) == []
    assert list(engine.stream_sentences(messages, session_id="s")) == []
    assert agent.stats()["messages"]["echo"] == before
    # a new question after the answer is sent as usual
    answer = engine.continue_chat(messages + user("again"), session_id="s").content
    assert answer.endswith(": again") and agent.stats()["messages"]["echo"] == before + 1


def test_an_unwritable_conversation_map_is_kept_in_memory_and_the_answer_returned(agent, caplog):
    engine = A2AChatEngine({"agent_url": agent.agent("echo"), "state_file": "/proc/ovos-a2a/conversations.json"})
    with caplog.at_level("WARNING", logger="ovos_a2a_solver"):
        first = engine.continue_chat(user("one"), session_id="s").content
        second = engine.continue_chat(user("two"), session_id="s").content
    assert first.endswith(": one") and second.endswith(": two")
    assert context_of(second) == context_of(first)  # the session goes on, in memory
    warnings = [r for r in caplog.records if "cannot write conversation file" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelname == "WARNING"


def test_a_conversation_file_nested_too_deep_is_moved_aside(agent, tmp_path, caplog):
    path = tmp_path / "c.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    engine = A2AChatEngine({"agent_url": agent.agent("echo"), "state_file": str(path)})
    first = engine.continue_chat(user("one"), session_id="s").content
    second = engine.continue_chat(user("two"), session_id="s").content
    assert context_of(second) == context_of(first)
    assert "unreadable" in caplog.text
    (aside,) = [p for p in tmp_path.iterdir() if p.name.startswith("c.json.corrupt-")]
    assert aside.stat().st_size == 200_000


def test_the_users_language_travels_in_the_message_metadata(agent, tmp_path):
    engine = A2AChatEngine({"agent_url": agent.agent("metadata"), "state_file": str(tmp_path / "c.json")})
    assert engine.continue_chat(user("hola"), session_id="s", lang="es-ES").content == '{"lang": "es-ES"}'
    assert "".join(engine.stream_tokens(user("bonjour"), session_id="s", lang="fr-FR")) == '{"lang": "fr-FR"}'
    assert list(engine.stream_sentences(user("hallo"), session_id="s", lang="de-DE")) == ['{"lang": "de-DE"}']
    assert engine.continue_chat(user("hi"), session_id="s").content == "{}"
