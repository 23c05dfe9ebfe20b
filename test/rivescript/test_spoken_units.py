"""The RiveScript engine says its reply in the units the A2A plugin says an agent's answer in
(one splitter for the package): a line at a time, and an initial does not end a sentence."""
from ovos_plugin_manager.templates.agents import AgentMessage, MessageRole

from ovos_a2a_solver.answers.sentences import speak
from ovos_a2a_solver.answers.revisions import Revision
from ovos_a2a_solver.rivescript.engine import RiveScriptChatEngine

POEM = "Roses are red\\nViolets are blue"
SIGNED = "My name is J. R. Bob. Hi."


def brain_with(tmp_path, replies: dict[str, str]):
    brain = tmp_path / "brain"
    brain.mkdir()
    rules = "".join(f"+ {trigger}\n- {reply}\n\n" for trigger, reply in replies.items())
    (brain / "replies.rive").write_text("! version = 2.0\n\n" + rules)
    return {"brain": str(brain), "persist_conversations": False}


def test_a_reply_is_said_in_the_units_the_plugin_says_an_answer_in(tmp_path):
    engine = RiveScriptChatEngine(brain_with(tmp_path, {"poem": POEM, "who are you": SIGNED}))
    try:
        for question, units in (("poem", ["Roses are red", "Violets are blue"]),
                                ("who are you", ["My name is J. R. Bob.", "Hi."])):
            said = list(engine.stream_sentences([AgentMessage(role=MessageRole.USER, content=question)], "s"))
            reply = engine.continue_chat([AgentMessage(role=MessageRole.USER, content=question)], "s").content
            assert said == units
            assert said == list(speak([Revision("answer", reply, False, last=True)]))
    finally:
        engine.shutdown()
