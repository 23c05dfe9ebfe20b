"""A task that outlives its turn: the persona says so in one line, the task stays bound to
the session, and the session's next utterance first delivers the finished answer."""
import pytest

from ovos_a2a_solver import A2AChatEngine, StillWorkingError
from ovos_a2a_solver._defaults import DEFAULT_STILL_WORKING, DEFAULT_STILL_WORKING_ANNOUNCED

from support.chat import chat_engine, user
from support.waiting import wait_until

LINE = "Still on it; I will tell you later."


def quick_engine(agent, name, tmp_path, **config):
    """A streaming engine for ``agent``'s agent ``name`` that waits 1 s for an answer."""
    return chat_engine(agent.agent(name), tmp_path, **{"timeout": 1, "streaming": True, **config})


#: the deadline of the tests whose session speaks again before or once the task ended: that turn
#: (the earlier answer fetched, the new message answered) must end within it on a busy machine too,
#: where 1 s was seen to pass
ROOMY = 3
#: work that outlives a roomy deadline
OUTLIVES_ROOMY = f"sleep:{ROOMY + 1}"


def roomy_engine(agent, name, tmp_path, **config):
    """The ``quick_engine`` with a roomy deadline (``ROOMY``)."""
    return quick_engine(agent, name, tmp_path, **{"timeout": ROOMY, **config})


def settled(engine, task_id, state):
    return wait_until(lambda: engine.client.get_task(task_id), f"task {task_id} to be {state}",
                      until=lambda t: t.status.state == state)


def test_a_task_past_the_deadline_is_announced_in_one_line_and_answered_before_the_next(agent, tmp_path):
    held = agent.held_work()  # works until released: past any deadline, however busy the machine
    engine = roomy_engine(agent, "echo", tmp_path, still_working=LINE)
    spoken = list(engine.stream_sentences(user(held.text), session_id="s"))
    assert spoken == [LINE]
    pending = engine.client.conversation("s").pending_task_id
    assert pending
    held.release()
    settled(engine, pending, 3)  # TASK_STATE_COMPLETED: the agent was not told to stop
    context = engine.client.conversation("s").context_id

    spoken = list(engine.stream_sentences(user("hello"), session_id="s"))
    assert spoken == [f"echo[{context}]: {held.text}", f"echo[{context}]: hello"]
    assert engine.client.conversation("s").pending_task_id is None
    assert list(engine.stream_sentences(user("again"), session_id="s")) == [f"echo[{context}]: again"]


@pytest.mark.parametrize("way", ["continue_chat", "stream_tokens"])
def test_every_way_of_asking_says_the_line_and_delivers_the_answer_later(agent, tmp_path, way):
    held = agent.held_work()  # works until released: past any deadline, however busy the machine
    engine = roomy_engine(agent, "echo", tmp_path)

    def ask(text):
        if way == "continue_chat":
            return engine.continue_chat(user(text), session_id="s").content
        return "".join(engine.stream_tokens(user(text), session_id="s"))

    assert ask(held.text) == DEFAULT_STILL_WORKING
    held.release()
    settled(engine, engine.client.conversation("s").pending_task_id, 3)
    context = engine.client.conversation("s").context_id
    assert ask("hello") == f"echo[{context}]: {held.text}\necho[{context}]: hello"


def test_a_task_still_working_at_the_next_utterance_stays_bound(agent, tmp_path):
    held = agent.held_work()  # works until released: past any deadline, however busy the machine
    engine = roomy_engine(agent, "echo", tmp_path)
    with pytest.raises(StillWorkingError) as caught:  # works past the first turn's deadline and the whole next turn
        engine.client.send_task(held.text, session_id="s")
    task_id = caught.value.task_id
    context = engine.client.conversation("s").context_id
    assert engine.client.send_task("quick", session_id="s") == f"echo[{context}]: quick"
    assert engine.client.conversation("s").pending_task_id == task_id  # not ready yet: still bound
    held.release()
    settled(engine, task_id, 3)
    assert engine.client.send_task("later", session_id="s") == f"echo[{context}]: {held.text}\necho[{context}]: later"


def test_a_task_that_then_asks_a_question_says_it_and_takes_the_answer(agent, tmp_path):
    held = agent.held_work()  # works until released: past any deadline, however busy the machine
    engine = quick_engine(agent, "ask", tmp_path)
    assert engine.continue_chat(user(held.text), session_id="s").content == DEFAULT_STILL_WORKING
    task_id = engine.client.conversation("s").pending_task_id
    held.release()
    settled(engine, task_id, 6)  # TASK_STATE_INPUT_REQUIRED
    context = engine.client.conversation("s").context_id
    assert engine.continue_chat(user("anything new?"), session_id="s").content == "which city?"
    assert engine.client.conversation("s").task_id == task_id
    assert engine.continue_chat(user("Paris"), session_id="s").content == f"continued[{context}]: Paris"


def test_a_task_the_agent_lost_is_let_go(agent, tmp_path):
    engine = roomy_engine(agent, "echo", tmp_path)
    with pytest.raises(StillWorkingError):
        engine.client.send_task(OUTLIVES_ROOMY, session_id="s")
    agent.forget()  # the agent restarted without its tasks
    context = engine.client.conversation("s").context_id
    assert engine.client.send_task("hello", session_id="s").endswith(": hello")
    assert engine.client.conversation("s").pending_task_id is None


@pytest.mark.parametrize("way", ["stream_sentences", "stream_task", "send_task"])
def test_a_stream_that_breaks_mid_answer_is_resumed_not_failed(agent, tmp_path, way):
    engine = A2AChatEngine({"agent_url": agent.agent("cut"), "state_file": str(tmp_path / "c.json"),
                            "timeout": 10, "streaming": True})
    client = engine.client
    before = agent.stats()["messages"]["cut"]
    if way == "stream_sentences":
        assert list(client.stream_sentences("go", session_id="s")) == ["First part.", "Second part.", "Third part."]
    elif way == "stream_task":
        assert "".join(client.stream_task("go", session_id="s")) == "First part. Second part. Third part."
    else:
        assert client.send_task("go", session_id="s") == "First part. Second part. Third part."
    assert agent.stats()["messages"]["cut"] == before + 1  # followed, not sent again


def test_the_answer_is_said_over_the_messagebus_when_ready_and_not_again(agent, tmp_path, messagebus):
    held = agent.held_work()  # works until released: past any deadline, however busy the machine
    bus, spoken = messagebus
    engine = quick_engine(agent, "echo", tmp_path, messagebus=bus)
    assert engine.warmed_up.wait(45), "the engine did not warm up"  # which connected the messagebus
    answer = engine.continue_chat(user(held.text), session_id="kitchen", lang="en-US").content
    assert answer == DEFAULT_STILL_WORKING_ANNOUNCED  # not "next time you talk to me": it is announced
    context = engine.client.conversation("kitchen").context_id
    held.release()
    said = wait_until(lambda: [s for s in spoken if s[1].get("session", {}).get("session_id") == "kitchen"],
                      "the answer to be said on the messagebus")
    assert said[0][0]["utterance"] == f"echo[{context}]: {held.text}" and said[0][0]["lang"] == "en-US"
    assert said[0][0]["expect_response"] is False
    assert engine.client.conversation("kitchen").pending_task_id is None
    assert engine.continue_chat(user("hello"), session_id="kitchen").content == f"echo[{context}]: hello"
    engine.shutdown()


def test_a_messagebus_slower_than_a_turn_waits_is_connected_by_the_warm_up(agent, tmp_path, messagebus,
                                                                          monkeypatch):
    """A turn waits a moment for a messagebus, and here that is never enough (as on a device too busy
    to answer in 3 s): the warm-up, which no turn waits for, waits longer, and the answer is announced."""
    held = agent.held_work()  # works until released: past any deadline, however busy the machine
    import ovos_a2a_solver.engine

    bus, spoken = messagebus
    monkeypatch.setattr(ovos_a2a_solver.engine, "BUS_CONNECT_TIMEOUT", 0.001)
    engine = quick_engine(agent, "echo", tmp_path, messagebus=bus)
    assert engine.warmed_up.wait(45), "the engine did not warm up"
    assert engine.continue_chat(user(held.text), session_id="slow-bus").content == DEFAULT_STILL_WORKING_ANNOUNCED
    held.release()
    said = wait_until(lambda: [s for s in spoken if s[1].get("session", {}).get("session_id") == "slow-bus"],
                      "the answer to be said on the messagebus")
    assert said[0][0]["utterance"].endswith(f": {held.text}")
    engine.shutdown()


def test_a_messagebus_that_does_not_answer_keeps_no_turn_waiting(agent, tmp_path, monkeypatch):
    """The named messagebus accepts connections and never answers, and waits for it take 30 s: the
    turn says its line at its deadline all the same, while the warm-up and the announcing thread
    still wait for the bus (a turn once waited behind them, up to their whole wait)."""
    import socket
    import threading

    import ovos_a2a_solver.engine

    monkeypatch.setattr(ovos_a2a_solver.engine, "BUS_CONNECT_TIMEOUT", 30)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # connections queue, and nothing ever answers them
        bus = {"host": "127.0.0.1", "port": silent.getsockname()[1], "route": "/core"}
        engine = quick_engine(agent, "echo", tmp_path, messagebus=bus)
        said = []
        turn = threading.Thread(target=lambda: said.append(engine.continue_chat(user("sleep:2"), session_id="s")),
                                daemon=True)
        turn.start()
        turn.join(20)
        waited = turn.is_alive()
        engine.shutdown()
    assert not waited, "the turn waited for the messagebus"
    assert said[0].content == DEFAULT_STILL_WORKING  # no bus at hand: the next utterance hears the answer


def test_a_question_announced_later_expects_a_response(agent, tmp_path, messagebus):
    held = agent.held_work()  # works until released: past any deadline, however busy the machine
    bus, spoken = messagebus
    engine = quick_engine(agent, "ask", tmp_path, messagebus=bus)  # works until released, then asks "which city?"
    engine.continue_chat(user(held.text), session_id="porch-ask")
    held.release()
    said = wait_until(lambda: [s for s in spoken if s[1].get("session", {}).get("session_id") == "porch-ask"],
                      "the question to be said on the messagebus")
    assert said[0][0]["utterance"] == "which city?" and said[0][0]["expect_response"] is True
    engine.shutdown()


def test_a_question_reopens_the_microphone_on_the_configured_messagebus_once_said(agent, tmp_path, messagebus):
    """Over a real ovos-messagebus: this client plays the audio service, saying the question's audio ended."""
    from ovos_bus_client import MessageBusClient
    from ovos_bus_client.message import Message

    bus, _ = messagebus
    audio = MessageBusClient(**bus)
    audio.run_in_thread()
    assert audio.connected_event.wait(30), "the messagebus did not accept a connection"
    listened = []
    audio.on("mycroft.mic.listen", lambda m: listened.append(m.context["session"]["session_id"]))
    engine = quick_engine(agent, "ask", tmp_path, messagebus=bus, timeout=10)
    try:
        assert list(engine.stream_sentences(user("weather"), session_id="den")) == ["which city?"]
        audio.emit(Message("recognizer_loop:audio_output_end", {}, {"session": {"session_id": "den"}}))
        assert wait_until(lambda: listened, "the microphone to be reopened") == ["den"]
    finally:
        engine.shutdown()
        audio.close()


def test_without_announce_the_answer_waits_for_the_next_utterance(agent, tmp_path, messagebus):
    held = agent.held_work()  # works until released: past any deadline, however busy the machine
    bus, spoken = messagebus
    engine = roomy_engine(agent, "echo", tmp_path, messagebus=bus, announce=False)
    assert engine.continue_chat(user(held.text), session_id="hall").content == DEFAULT_STILL_WORKING
    task_id = engine.client.conversation("hall").pending_task_id
    held.release()
    settled(engine, task_id, 3)
    context = engine.client.conversation("hall").context_id
    answer = engine.continue_chat(user("hi"), session_id="hall").content
    assert answer == f"echo[{context}]: {held.text}\necho[{context}]: hi"
    assert not [s for s in spoken if s[1].get("session", {}).get("session_id") == "hall"]


@pytest.mark.parametrize("turn", ["first", "later"])
def test_in_a_blocking_exchange_the_task_is_found_by_its_message(agent, tmp_path, turn):
    held = agent.held_work()  # works until released: past any deadline, however busy the machine
    engine = roomy_engine(agent, "echo", tmp_path, streaming=False, announce=False)
    if turn == "later":
        engine.continue_chat(user("hello"), session_id="s")
    assert engine.continue_chat(user(held.text), session_id="s").content == DEFAULT_STILL_WORKING
    message_id = engine.client.conversation("s").pending_message_id
    assert message_id
    held.release()

    def completed_task_of_the_message():
        return [t for t in engine.client.list_tasks().tasks
                if t.status.state == 3 and any(m.message_id == message_id for m in t.history)]

    wait_until(completed_task_of_the_message, "the agent to complete the message's task")
    answer = engine.continue_chat(user("next"), session_id="s").content
    earlier, now = answer.split("\n")
    assert earlier.endswith(f": {held.text}") and now.endswith(": next"), answer
    conversation = engine.client.conversation("s")
    assert conversation.pending_task_id is None and conversation.pending_message_id is None
    assert earlier.split(":")[0] == now.split(":")[0]  # one conversation: echo[ctx]


def test_in_a_blocking_exchange_the_answer_is_announced_when_ready(agent, tmp_path, messagebus):
    held = agent.held_work()  # works until released: past any deadline, however busy the machine
    bus, spoken = messagebus
    engine = quick_engine(agent, "echo", tmp_path, streaming=False, messagebus=bus)
    assert engine.warmed_up.wait(45), "the engine did not warm up"
    assert engine.continue_chat(user(held.text), session_id="porch").content == DEFAULT_STILL_WORKING_ANNOUNCED
    held.release()
    said = wait_until(lambda: [s for s in spoken if s[1].get("session", {}).get("session_id") == "porch"],
                      "the answer to be said on the messagebus")
    assert said[0][0]["utterance"].endswith(f": {held.text}")
    engine.shutdown()


def test_waiting_for_an_answer_ends_when_the_client_closes(agent, tmp_path):
    import threading

    engine = quick_engine(agent, "echo", tmp_path, announce=False)
    client = engine.client
    with pytest.raises(StillWorkingError) as caught:
        client.send_task("sleep:30", session_id="s")
    result = []
    waiter = threading.Thread(target=lambda: result.append(client.answer_when_ready("s", caught.value.task_id)))
    waiter.start()
    client.close()
    wait_until(lambda: not waiter.is_alive(), "answer_when_ready to return once the client is closed")
    assert result == [None]


def test_a_hivemind_satellite_hears_the_late_answer_and_its_microphone_reopens(agent, tmp_path, messagebus):
    """Through ovos-persona on a real ovos-messagebus, turns as hivemind-core injects them for a
    satellite (and ovos-core hands them to the persona): what the engine sends for a turn goes
    back to that satellite, session and all."""
    import json

    from ovos_bus_client import MessageBusClient
    from ovos_bus_client.message import Message
    from ovos_bus_client.session import Session
    from ovos_persona import PersonaService

    from support import REPO_ROOT
    from support.personas import shut_down_personas

    held = agent.held_work()  # works until released: past any deadline, however busy the machine
    bus, spoken = messagebus
    peer = "tcp4:10.0.0.7:52014"  # hivemind-core names a satellite's connection so
    config = json.loads((REPO_ROOT / "persona_examples" / "remote-agent.json").read_text())
    config["ovos-a2a-solver"].update({"agent_url": agent.agent("ask"), "timeout": 1, "messagebus": bus,
                                      "state_file": str(tmp_path / "c.json")})
    personas = tmp_path / "personas"
    personas.mkdir()
    (personas / "remote.json").write_text(json.dumps(config))
    hub = MessageBusClient(**bus)
    hub.run_in_thread()
    assert hub.connected_event.wait(30), "the messagebus did not accept a connection"
    listened = []
    hub.on("mycroft.mic.listen", lambda m: listened.append(m.context))
    service = PersonaService(hub, config={"personas_path": str(personas), "default_persona": "remote agent",
                                          "handle_fallback": True, "ignore_plugin_personas": True})

    def say(text, session_id):
        utterance = Message("recognizer_loop:utterance", {"utterances": [text], "lang": "en-US"},
                            {"session": Session(session_id).serialize(), "source": peer, "destination": "skills",
                             "peer": peer, "platform": "HiveMindVoiceSat"})
        service.handle_persona_query(utterance.reply("persona:query", {"utterance": text, "persona": "remote agent"}))

    def to_satellite(context, session_id):
        return context.get("destination") == peer and context["session"]["session_id"] == session_id

    try:
        say("weather", "sat-kitchen")  # the agent asks "which city?" at once
        reopened = wait_until(lambda: listened, "the satellite's microphone to be reopened")
        assert to_satellite(reopened[0], "sat-kitchen") and reopened[0]["peer"] == peer, reopened

        say(held.text, "sat-porch")  # works past the 1 s deadline, until released, then asks "which city?"
        held.release()
        said = wait_until(lambda: [d for d, c in spoken if d["utterance"] == "which city?"
                                   and to_satellite(c, "sat-porch")],
                          "the late question to be said to the satellite", timeout=20)
        assert said[0]["expect_response"] is True  # the satellite's own audio service reopens its microphone
        still = [d["utterance"] for d, c in spoken if c.get("session", {}).get("session_id") == "sat-porch"]
        assert still[0] == DEFAULT_STILL_WORKING_ANNOUNCED, still
    finally:
        try:
            shut_down_personas(service)
        finally:
            hub.close()
