"""A persona whose agent needs the person's own account: the code is said, put on the OVOS
messagebus for a screen, and the answer follows once the person signed in (in the same turn, or
said over the bus when it comes later). A real authorization server (oidc-provider), a real
ovos-messagebus, and a person who signs in from the link a companion screen shows.
"""
import os
import re
import stat
import threading

from ovos_bus_client import MessageBusClient

from ovos_a2a_solver._defaults import DEFAULT_SIGN_IN_WAITING
from support.authorization_server import Person
from support.chat import chat_engine, user
from support.waiting import wait_until

PROMPT = re.compile(r"To let me use signin, go to \S+ and enter the code [A-Z-]+ [A-Z-]+\.")


def sign_in_engine(agent, server, tmp_path, bus=None, **settings):
    """A persona engine of the sign-in agent whose codes and tokens may go to ``server``."""
    return chat_engine(agent.agent("signin"), tmp_path, **{
        "oauth2_client_id": "voice-device", "oauth2_token_origins": [server.url], "timeout": 15,
        "sign_in_file": str(tmp_path / "sign_ins.json"), **({"messagebus": bus} if bus else {}), **settings})


class Screen:
    """A companion screen on the messagebus: it keeps the sign-in messages it hears, and has the
    person open the link of a code as soon as it is shown (when it has a person), to approve it
    or deny it (``act``)."""

    def __init__(self, bus: dict, person: Person | None = None, act: str = "approve") -> None:
        self.person, self.act, self.heard, self.opened = person, act, [], []
        self.client = MessageBusClient(**bus)
        for kind in ("ovos.a2a.sign_in", "ovos.a2a.sign_in.ended", "speak"):
            self.client.on(kind, self.hear)
        self.client.run_in_thread()
        assert self.client.connected_event.wait(30), "the messagebus did not accept the screen"

    def hear(self, message) -> None:
        self.heard.append(message)
        if message.msg_type == "ovos.a2a.sign_in" and message.data["step"] == "started" and self.person:
            opened = threading.Thread(target=getattr(self.person, self.act),
                                      args=(message.data["verification_uri_complete"],))
            self.opened.append(opened)
            opened.start()

    def of(self, kind: str, session_id: str) -> list:
        return [m for m in self.heard if m.msg_type == kind and m.context["session"]["session_id"] == session_id]

    def close(self) -> None:
        for opened in self.opened:
            opened.join(10)
        self.client.close()


def test_a_person_signs_in_from_the_screens_link_and_hears_the_answer_in_the_same_turn(
        sign_in_agent, authorization_server, messagebus, tmp_path):
    bus, _ = messagebus
    screen = Screen(bus, Person("ada"))
    engine = sign_in_engine(sign_in_agent, authorization_server, tmp_path, bus)
    try:
        assert engine.warmed_up.wait(15), "the engine did not warm up"
        sentences = list(engine.stream_sentences(user("my day"), session_id="kitchen"))
        assert PROMPT.fullmatch(sentences[0]) and sentences[1:] == ["calendar of ada: my day"]
        shown = wait_until(lambda: screen.of("ovos.a2a.sign_in", "kitchen"), "the code on the bus")[0].data
        code = sentences[0].rsplit("the code ", 1)[1].rstrip(".")
        assert shown["spoken_code"] == code and shown["step"] == "started" and shown["agent"] == "signin"
        assert shown["verification_uri_complete"] == f"{shown['verification_uri']}?user_code={shown['user_code']}"
        ended = wait_until(lambda: screen.of("ovos.a2a.sign_in.ended", "kitchen"), "the end on the bus")[0]
        assert ended.data["step"] == "signed in"
        assert stat.S_IMODE(os.stat(tmp_path / "sign_ins.json").st_mode) == 0o600
        assert engine.continue_chat(user("tomorrow"), session_id="kitchen").content == "calendar of ada: tomorrow"
    finally:
        engine.shutdown()
        screen.close()


def test_a_sign_in_after_the_turns_deadline_is_answered_over_the_messagebus(
        sign_in_agent, authorization_server, messagebus, tmp_path):
    bus, _ = messagebus
    screen = Screen(bus)
    engine = sign_in_engine(sign_in_agent, authorization_server, tmp_path, bus, timeout=1.5)
    try:
        assert engine.warmed_up.wait(15), "the engine did not warm up"
        sentences = list(engine.stream_sentences(user("my day"), session_id="hall"))
        assert PROMPT.fullmatch(sentences[0]) and sentences[1:] == [DEFAULT_SIGN_IN_WAITING]
        shown = wait_until(lambda: screen.of("ovos.a2a.sign_in", "hall"), "the code on the bus")[0].data
        Person("bea").approve(shown["verification_uri"], shown["user_code"])  # typed, as heard
        said = wait_until(lambda: screen.of("speak", "hall"), "the answer to be said on the messagebus")
        assert said[0].data["utterance"] == "calendar of bea: my day"
    finally:
        engine.shutdown()
        screen.close()


def test_a_denied_sign_in_is_said_and_signing_out_asks_again(sign_in_agent, authorization_server, messagebus,
                                                             tmp_path):
    bus, _ = messagebus
    screen = Screen(bus, Person("cal"), act="deny")
    engine = sign_in_engine(sign_in_agent, authorization_server, tmp_path, bus)
    try:
        assert engine.warmed_up.wait(15), "the engine did not warm up"
        answer = engine.continue_chat(user("my day"), session_id="study").content
        assert answer == "The sign-in to signin was declined, so I cannot ask it."
        ended = wait_until(lambda: screen.of("ovos.a2a.sign_in.ended", "study"), "the end on the bus")
        assert [m.data["step"] for m in ended] == ["denied"]
        screen.act = "approve"
        answer = engine.continue_chat(user("my day"), session_id="study").content
        assert PROMPT.match(answer) and answer.endswith("\ncalendar of cal: my day")
        assert engine.sign_out("study") == 1  # "forget my calendar account"
        assert engine.sign_out("study") == 0
        answer = engine.continue_chat(user("my week"), session_id="study").content
        assert PROMPT.match(answer) and answer.endswith("\ncalendar of cal: my week")  # signed in anew
    finally:
        engine.shutdown()
        screen.close()
