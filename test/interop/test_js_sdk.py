"""Interop with the official A2A JS SDK (``@a2a-js/sdk`` 1.3.0 for A2A 1.0, 0.3.14 for A2A 0.3),
in Node, installed once into a cache (test/support/js_peers.py).

* Its server, serving the scripted agent of test/support/peers/js/ over each binding it offers
  (JSON-RPC, HTTP+JSON, gRPC), asked through this plugin's client: answers, streamed answers,
  a conversation kept, a question answered by the next utterance, and a task the agent forgot
  when it restarted.
* Its client (test/support/peers/js/client_v*.cjs), asking the bridge over each binding the
  bridge offers that it speaks.
"""
import dataclasses

import pytest
from a2a.client import A2AClientError
from a2a.utils.errors import A2AError, InternalError, TaskNotFoundError

from ovos_a2a_solver import A2AClient

from support.bridge_in_process import InProcessBridge
from support.cli_run import Cli
from support.js_peers import JS_SDK_03, JS_SDK_1, JsAgentProcess, NpmProject, node_modules, run_js_client
from support.network import free_port

pytestmark = pytest.mark.timeout(600)  # the first run installs the npm projects

BINDINGS = pytest.mark.parametrize("binding", ["jsonrpc", "rest", "grpc"])
MODES = pytest.mark.parametrize("streaming", [False, True], ids=["blocking", "streaming"])
CARD_BINDING = {"jsonrpc": "JSONRPC", "rest": "HTTP+JSON", "grpc": "GRPC"}
STREAM_CHUNKS = ["Hello there. ", "How are you today? ", "Fine."]  # what behaviour.cjs streams


# the npm projects' cache

def _probe(version: str) -> NpmProject:
    return dataclasses.replace(JS_SDK_1, name=f"npm-probe-{version}", dependencies=(("@a2a-js/sdk", version),),
                               modules_var="OVOS_A2A_TESTS_NO_SUCH_MODULES")


def test_the_sdk_modules_may_be_given(monkeypatch):
    monkeypatch.setenv(JS_SDK_1.modules_var, "/some/where/node_modules")
    assert node_modules(JS_SDK_1) == "/some/where/node_modules"


def test_an_npm_project_that_cannot_be_installed_is_an_error_with_npms_output(monkeypatch, tmp_path):
    """The registry answers, but has no such version: RuntimeError with npm's output, not a skip."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(RuntimeError) as err:
        node_modules(_probe("0.0.0-nope"))
    assert "npm install" in str(err.value) and "0.0.0-nope" in str(err.value)
    assert not (tmp_path / "ovos-a2a-solver-tests" / "npm-probe-0.0.0-nope").exists()


def test_an_npm_project_is_skipped_only_when_the_registry_is_unreachable(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    registry = f"http://127.0.0.1:{free_port()}/"  # nothing listens there
    monkeypatch.setenv("npm_config_registry", registry)
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm"))  # nothing cached either
    monkeypatch.setenv("npm_config_fetch_retries", "0")
    with pytest.raises(pytest.skip.Exception) as skipped:
        node_modules(_probe("1.3.0"))
    assert "registry is unreachable" in str(skipped.value) and "127.0.0.1" in str(skipped.value)
    assert not (tmp_path / "ovos-a2a-solver-tests" / "npm-probe-1.3.0").exists()


# the JS SDK's server asked by this plugin's client

JS_SERVERS = [(JS_SDK_1, "esm", False), (JS_SDK_1, "esm", True), (JS_SDK_03, "esm", False)]
JS_SERVER_IDS = ["js-1.3.0", "js-1.3.0-as-0.3", "js-0.3.14"]


@pytest.fixture(scope="module", params=JS_SERVERS, ids=JS_SERVER_IDS)
def js(request):
    """The JS SDK's server for the module: 1.3 (A2A 1.0, and A2A 0.3 through its compat layer)
    and 0.3.14, each served by its ES modules."""
    with JsAgentProcess(*request.param) as process:
        yield process


@BINDINGS
def test_each_js_agent_card_names_its_binding_and_version(js, binding):
    with A2AClient(js.agent(binding)) as client:
        card = client.fetch_agent_card()
    assert card.streaming
    assert {i.binding for i in card.interfaces} == {CARD_BINDING[binding]}
    assert all(i.protocol_version.startswith(js.protocol_version) for i in card.interfaces)  # 0.3.14: "0.3.0"


@BINDINGS
@MODES
def test_a_js_agent_answers(js, binding, streaming):
    with A2AClient(js.agent(binding), streaming=streaming) as client:
        answer = client.send_task("hello", session_id="s")
        assert answer == f"echo[{client.conversation('s').context_id}]: hello"
        assert client.send_task("stream", session_id="s") == "".join(STREAM_CHUNKS)


@BINDINGS
def test_a_js_agent_streams_its_answer_chunk_by_chunk(js, binding):
    with A2AClient(js.agent(binding)) as client:
        assert list(client.stream_task("stream", session_id="s")) == STREAM_CHUNKS
        assert list(client.stream_sentences("stream", session_id="s")) == \
            ["Hello there.", "How are you today?", "Fine."]


@BINDINGS
@MODES
def test_a_js_agent_keeps_the_conversation(js, binding, streaming):
    with A2AClient(js.agent(binding), streaming=streaming) as client:
        assert client.send_task("remember tin", session_id="s") == "ok, I will remember tin"
        assert client.send_task("recall", session_id="s") == "you told me tin"
        assert client.send_task("recall", session_id="other") == "I remember nothing"


@BINDINGS
@MODES
def test_a_js_agent_question_is_answered_by_the_next_utterance(js, binding, streaming):
    with A2AClient(js.agent(binding), streaming=streaming) as client:
        assert client.send_task("ask", session_id="s") == "which city?"
        waiting = client.conversation("s")
        assert waiting.task_id
        assert client.send_task("lisbon", session_id="s") == f"continued[{waiting.context_id}]: lisbon"
        assert client.conversation("s").task_id is None
        assert client.send_task("ask", session_id="s") == "which city?"  # a new task, same context
        assert client.conversation("s").context_id == waiting.context_id


def forgotten_task_error(sdk, module_format, binding, streaming):
    """(error class, start of its message): how the client raises a restarted JS agent's answer to
    a message for the task it forgot."""
    if sdk is JS_SDK_03 and binding == "rest" and streaming:
        # 0.3.x cannot word an error that comes before a REST stream's first event: whatever it
        # was, its handler throws while answering it, and answers that as an internal error
        return InternalError, "Bug: toJson serializer and body must be provided for non-204 responses."
    if sdk is JS_SDK_03 and module_format == "cjs":
        # the CommonJS entry points of 0.3.x do not share their error classes: every error of the
        # request handler is answered as an internal error (gRPC: INTERNAL), with its message
        return (A2AClientError, "gRPC Error INTERNAL: Task not found: ") if binding == "grpc" else \
            (InternalError, "Task not found: ")
    return TaskNotFoundError, "Task not found: "


@pytest.fixture(scope="module", params=[*JS_SERVERS, (JS_SDK_03, "cjs", False)],
                ids=[*JS_SERVER_IDS, "js-0.3.14-cjs"])
def restartable_js(request):
    """The JS SDK's server for the tests that restart it: those of :func:`js`, and 0.3.14
    served by its CommonJS build (see test/support/peers/js/sdk.cjs)."""
    with JsAgentProcess(*request.param) as process:
        yield process


@BINDINGS
@MODES
def test_a_task_the_restarted_js_agent_forgot_fails_once_then_a_new_task_starts(restartable_js, binding, streaming):
    """The agent asks, then restarts (its in-memory tasks are gone) before the reply: the reply
    fails once, saying so as the agent words it, and the next utterance starts a new task in the
    same context instead of being sent again to the task that is no more."""
    agent = restartable_js
    error, message = forgotten_task_error(agent.project, agent.module_format, binding, streaming)
    with A2AClient(agent.agent(binding), streaming=streaming) as client:
        assert client.send_task("ask", session_id="s") == "which city?"
        ctx = client.conversation("s").context_id
        agent.restart()
        with pytest.raises(A2AError) as failure:
            client.send_task("lisbon", session_id="s")
        assert type(failure.value) is error and str(failure.value).startswith(message), repr(failure.value)
        assert client.conversation("s").context_id == ctx and client.conversation("s").task_id is None
        assert client.send_task("hello", session_id="s") == f"echo[{ctx}]: hello"


@pytest.mark.parametrize("js", JS_SERVERS[:1], ids=JS_SERVER_IDS[:1], indirect=True)
def test_the_command_line_asks_a_js_agent(js, tmp_path):
    cli = Cli(tmp_path / "state")
    asked = cli.run("send", js.agent("jsonrpc"), "ask", "--session", "s")
    assert asked.returncode == 0 and asked.stdout.strip() == "which city?", asked
    answered = cli.run("send", js.agent("jsonrpc"), "lisbon", "--session", "s")
    assert answered.returncode == 0 and answered.stdout.strip().startswith("continued["), answered
    assert answered.stdout.strip().endswith("]: lisbon"), answered


# the JS SDK's client asking the bridge

@pytest.fixture(scope="module")
def bridge_with_grpc():
    """The bridge (echo backend) with its gRPC binding too."""
    with InProcessBridge("--grpc-port", "0") as bridge:
        yield bridge


BRIDGE_BINDINGS = pytest.mark.parametrize("sdk, transport", [
    (JS_SDK_1, "JSONRPC"), (JS_SDK_1, "HTTP+JSON"), (JS_SDK_1, "GRPC"),
    (JS_SDK_03, "JSONRPC"),  # the only 0.3 interface on the bridge's card (its gRPC speaks 1.0 only)
], ids=["js-1.3.0-jsonrpc", "js-1.3.0-rest", "js-1.3.0-grpc", "js-0.3.14-jsonrpc"])


@BRIDGE_BINDINGS
def test_the_js_client_asks_the_bridge(bridge_with_grpc, sdk, transport):
    turns = run_js_client(sdk, bridge_with_grpc.card_url, transport, "remember gold", "recall", "ask:which city?",
                          "lisbon")
    assert [t["answer"] for t in turns] == ["ok, I will remember gold.", "you told me gold.", "which city?",
                                            "echo: lisbon"]
    assert [t["state"] for t in turns] == ["completed", "completed", "input-required", "completed"]
    assert {t["contextId"] for t in turns} == {turns[0]["contextId"]}
    assert turns[3]["taskId"] == turns[2]["taskId"]  # the question's task, continued
    assert {(t["transport"], t["protocolVersion"]) for t in turns} == {(transport, sdk.protocol_version)}


@BRIDGE_BINDINGS
def test_the_js_client_streams_from_the_bridge(bridge_with_grpc, sdk, transport):
    turns = run_js_client(sdk, bridge_with_grpc.card_url, transport, "slow:0.05", "ask:which city?", "lisbon",
                          stream=True)
    assert turns[0]["chunks"] == ["Sentence 1.", " Sentence 2.", " Sentence 3.", " Sentence 4.", " Sentence 5.", ""]
    assert [t["answer"] for t in turns[1:]] == ["which city?", "echo: lisbon"]
    assert [t["state"] for t in turns] == ["completed", "input-required", "completed"]
    assert {t["contextId"] for t in turns} == {turns[0]["contextId"]}
    assert turns[2]["taskId"] == turns[1]["taskId"]


@BRIDGE_BINDINGS
@pytest.mark.parametrize("pace", ["slow:0.02", "slow:0.4"], ids=["together", "apart"])
def test_the_js_client_reads_the_bridges_answer_once_whether_it_honours_append_or_not(bridge_with_grpc, sdk, transport,
                                                                                      pace):
    """Sentences close together and further apart than 0.25 s: the chunks concatenated (append
    ignored) and the artifact with append honoured are the answer once; no working status says
    anything (the notes are metadata)."""
    (turn,) = run_js_client(sdk, bridge_with_grpc.card_url, transport, pace, stream=True)
    whole = "Sentence 1. Sentence 2. Sentence 3. Sentence 4. Sentence 5."
    assert (turn["state"], turn["answer"], turn["applied"], turn["statusTexts"]) == ("completed", whole, whole, [])
