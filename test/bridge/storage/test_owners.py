"""Bridge: two callers never share a memory, a task or a conversation.

Two Bearer tokens are two owners. A contextId is only a name: the persona's memory is
kept per (owner, tenant, contextId), so a caller who sends another caller's contextId
reaches a conversation of its own. Another owner's task is not found, whatever the
operation (get, cancel, subscribe, a message naming it, a replay of its messageId), and
the owner's task is left as it was. Checked on the echo backend, on the embedded
default persona and on a relay persona (this package's plugin as the handler).
"""
from __future__ import annotations

import json

import httpx
import pytest

from support.bridge_in_process import InProcessBridge
from support.bridge_rpc import OwnerCalls, answer, message, state
from support.personas import relay_bridge
from support.waiting import wait_until


TOKEN_A, TOKEN_B = "owner-a-Rr8Kp4w", "owner-b-Bq6Hv3n"
TOKENS = {"OVOS_A2A_TOKENS": f"{TOKEN_A},{TOKEN_B}"}


class Caller(OwnerCalls):
    """JSON-RPC 1.0 calls to a bridge as one owner."""

    def say(self, text: str, blocking: bool = True, **ids) -> dict:
        params = {"message": message(text, **ids)}
        if not blocking:
            params["configuration"] = {"returnImmediately": True}
        return self.task("SendMessage", params)

    def error_code(self, method: str, params: dict) -> int:
        return self.error(method, params)["code"]

    def subscribe_error(self, task_id: str) -> int:
        body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}}
        with httpx.stream("POST", self.url, json=body, headers={**self.headers, "Accept": "text/event-stream"},
                          timeout=30) as response:
            for line in response.iter_lines():
                data = json.loads(line[5:]) if line.startswith("data:") else (json.loads(line) if line else None)
                if data is not None:
                    return data["error"]["code"] if "error" in data else 0
        return 0


TASK_NOT_FOUND = -32001


@pytest.fixture(scope="module")
def two_token_heartbeat_bridge():
    """An echo bridge (1 s heartbeat) that takes two Bearer tokens: two owners."""
    with InProcessBridge("--heartbeat", "1", env=TOKENS) as process:
        yield process


def test_a_context_id_sent_by_another_owner_reaches_a_memory_of_its_own(two_token_heartbeat_bridge):
    a, b = Caller(two_token_heartbeat_bridge, TOKEN_A), Caller(two_token_heartbeat_bridge, TOKEN_B)
    gold = a.say("remember gold")
    context = gold["contextId"]
    assert answer(b.say("recall", context_id=context)) == "I remember nothing."
    assert answer(b.say("remember silver", context_id=context)) == "ok, I will remember silver."
    assert answer(a.say("recall", context_id=context)) == "you told me gold."
    assert answer(b.say("recall", context_id=context)) == "you told me silver."


def test_another_owners_task_is_not_found_by_any_operation_and_stays_as_it_was(two_token_heartbeat_bridge):
    a, b = Caller(two_token_heartbeat_bridge, TOKEN_A), Caller(two_token_heartbeat_bridge, TOKEN_B)
    working = a.say("slow:0.5", blocking=False)
    wait_until(lambda: answer(a.task("GetTask", {"id": working["id"]})).startswith("Sentence 1."),
               "the owner's task to be working")
    assert b.error_code("GetTask", {"id": working["id"]}) == TASK_NOT_FOUND
    assert b.error_code("CancelTask", {"id": working["id"]}) == TASK_NOT_FOUND
    assert b.subscribe_error(working["id"]) == TASK_NOT_FOUND
    assert working["id"] not in {t["id"] for t in b.call("ListTasks", {"pageSize": 100})["result"]["tasks"]}
    done = wait_until(lambda: a.task("GetTask", {"id": working["id"]}), "the owner's task to complete",
                      until=lambda t: state(t) == "TASK_STATE_COMPLETED")
    assert answer(done).endswith("Sentence 5."), done  # B's cancel did not touch it

    asking = a.say("ask:which city?")
    assert state(asking) == "TASK_STATE_INPUT_REQUIRED"
    reply = b.call("SendMessage", {"message": message("Paris", task_id=asking["id"], context_id=asking["contextId"])})
    assert reply["error"]["code"] == TASK_NOT_FOUND, reply
    reply = b.call("SendMessage", {"message": message("Paris", task_id=asking["id"])})
    assert reply["error"]["code"] == TASK_NOT_FOUND, reply
    assert state(a.task("GetTask", {"id": asking["id"]})) == "TASK_STATE_INPUT_REQUIRED"
    answered = a.say("Lisbon", task_id=asking["id"], context_id=asking["contextId"])
    assert state(answered) == "TASK_STATE_COMPLETED" and answer(answered).endswith("echo: Lisbon")


def test_replaying_another_owners_message_id_starts_work_of_ones_own(two_token_heartbeat_bridge):
    a, b = Caller(two_token_heartbeat_bridge, TOKEN_A), Caller(two_token_heartbeat_bridge, TOKEN_B)
    shared = message("remember the code 1234")
    mine = a.task("SendMessage", {"message": shared})
    theirs = b.task("SendMessage", {"message": shared})
    assert theirs["id"] != mine["id"] and theirs["contextId"] != mine["contextId"]
    assert answer(b.say("recall", context_id=mine["contextId"])) == "I remember nothing."


def test_the_default_persona_keeps_one_memory_per_owner_and_conversation(private_state, tmp_path):
    with InProcessBridge(backend="persona", env=TOKENS) as bridge:  # its memory in private_state
        a, b = Caller(bridge, TOKEN_A), Caller(bridge, TOKEN_B)
        zed = a.say("my name is Zed")
        context = zed["contextId"]
        assert "Zed" in answer(zed)
        assert answer(a.say("what is my name", context_id=context)) == "Your name is Zed."
        for reply in (answer(a.say("what is my name")),                      # A, a fresh conversation
                      answer(b.say("what is my name", context_id=context)),  # B, with A's contextId
                      answer(b.say("what is my name"))):                     # B, a fresh conversation
            assert "Zed" not in reply and reply.startswith("I do not know your name"), reply
        ada = b.say("my name is Ada", context_id=context)
        assert "Ada" in answer(ada)
        assert answer(a.say("what is my name", context_id=context)) == "Your name is Zed."
        assert answer(b.say("what is my name", context_id=context)) == "Your name is Ada."


def test_a_relay_persona_never_continues_another_owners_remote_task(agent, private_state, tmp_path):
    with relay_bridge(tmp_path, agent.agent("ask"), env=TOKENS) as bridge:
        a, b = Caller(bridge, TOKEN_A), Caller(bridge, TOKEN_B)
        asking = a.say("book a trip")
        assert state(asking) == "TASK_STATE_INPUT_REQUIRED" and "which city?" in json.dumps(asking["status"])
        # B, in A's conversation: its own remote conversation, which asks its own question
        intruder = b.say("lisbon", context_id=asking["contextId"])
        assert state(intruder) == "TASK_STATE_INPUT_REQUIRED", intruder
        assert intruder["id"] != asking["id"]
        # A's remote task still waits for A, and A's answer continues it
        answered = a.say("porto", task_id=asking["id"], context_id=asking["contextId"])
        assert state(answered) == "TASK_STATE_COMPLETED", answered
        assert answer(answered).startswith("continued[") and answer(answered).endswith("]: porto"), answer(answered)
