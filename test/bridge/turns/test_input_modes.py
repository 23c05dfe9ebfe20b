"""What the bridge does with a message that is not only text, on every binding.

The persona is asked in words: the card's ``defaultInputModes`` are ``text/plain``. A message
with no part in words (only data, only a file of another media type) is refused with
ContentTypeNotSupported naming what the card takes (-32005, HTTP 415, gRPC INVALID_ARGUMENT),
never answered as an empty utterance. A text file sent inline is read as text; beside text,
the other parts are left out.
"""
from __future__ import annotations

import asyncio
import base64
import uuid

import httpx
import pytest
from a2a.types import Message, Part, Role, SendMessageRequest
from a2a.utils.errors import ContentTypeNotSupportedError
from google.protobuf.struct_pb2 import Value

from support.bridge_in_process import InProcessBridge
from support.bridge_rpc import HEADERS, answer, health, rpc, task_of
from support.waiting import wait_until

ONLY_DATA = [{"data": {"city": "Lisbon"}}]
ONLY_FILE = [{"url": "https://example.org/photo.png", "mediaType": "image/png"}]
NOT_IN_WORDS = {"only data": ONLY_DATA, "only a file": ONLY_FILE}


@pytest.fixture(scope="module")
def bridge_with_grpc():
    """A bridge (echo backend) with its gRPC binding too."""
    with InProcessBridge("--grpc-port", "0") as process:
        yield process


def message_of_parts(parts: list) -> dict:
    """A user message (A2A 1.0) of ``parts`` as given."""
    return {"role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": parts}


def assert_names_the_input_modes(text: str) -> None:
    assert "text/plain" in text and "defaultInputModes" in text, text


@pytest.mark.parametrize("parts", NOT_IN_WORDS.values(), ids=NOT_IN_WORDS.keys())
def test_jsonrpc_refuses_a_message_with_nothing_in_words(bridge_with_grpc, parts):
    error = rpc(bridge_with_grpc.url, "SendMessage", {"message": message_of_parts(parts)}).get("error")
    assert error is not None and error["code"] == -32005, error
    assert_names_the_input_modes(error["message"])
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
            "params": {"message": message_of_parts(parts)}}
    streamed = httpx.post(bridge_with_grpc.url + "/", json=body, headers=HEADERS, timeout=30)
    assert "text/event-stream" not in streamed.headers["content-type"], streamed.text  # refused before it began
    assert streamed.json()["error"]["code"] == -32005, streamed.text
    assert health(bridge_with_grpc)["running"] == 0


@pytest.mark.parametrize("parts", NOT_IN_WORDS.values(), ids=NOT_IN_WORDS.keys())
def test_http_json_refuses_a_message_with_nothing_in_words(bridge_with_grpc, parts):
    for verb in ("send", "stream"):
        response = httpx.post(f"{bridge_with_grpc.url}/rest/message:{verb}",
                              json={"message": message_of_parts(parts)}, headers=HEADERS, timeout=30)
        assert response.status_code == 415, response.text
        error = response.json()["error"]
        assert error["details"][0]["reason"] == "CONTENT_TYPE_NOT_SUPPORTED", error
        assert_names_the_input_modes(error["message"])


def test_jsonrpc_0_3_refuses_a_message_with_nothing_in_words(bridge_with_grpc):
    for parts in ([{"kind": "data", "data": {"city": "Lisbon"}}],
                  [{"kind": "file", "file": {"uri": "https://example.org/photo.png", "mimeType": "image/png"}}]):
        body = {"jsonrpc": "2.0", "id": "r1", "method": "message/send",
                "params": {"message": {"kind": "message", "messageId": uuid.uuid4().hex, "role": "user",
                                       "parts": parts}}}
        error = httpx.post(bridge_with_grpc.url + "/", json=body, timeout=30).json().get("error")
        assert error is not None and error["code"] == -32005, error
        assert_names_the_input_modes(error["message"])


def test_grpc_refuses_a_message_with_nothing_in_words(bridge_with_grpc):
    from support.bridge_rpc import grpc_client

    async def main():
        async with grpc_client(bridge_with_grpc.url) as client:
            for part in (Part(data=Value(string_value="Lisbon")),
                         Part(url="https://example.org/photo.png", media_type="image/png")):
                msg = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[part])
                with pytest.raises(ContentTypeNotSupportedError) as refused:
                    async for _ in client.send_message(SendMessageRequest(message=msg)):
                        pass
                assert_names_the_input_modes(str(refused.value))

    asyncio.run(main())


def test_beside_text_the_other_parts_are_left_out(bridge_with_grpc):
    parts = [{"text": "hello"}, *ONLY_DATA, *ONLY_FILE]
    sent = {"message": message_of_parts(parts)}
    assert answer(task_of(rpc(bridge_with_grpc.url, "SendMessage", sent))) == "echo: hello"


def test_a_text_file_sent_inline_is_read_as_text(bridge_with_grpc):
    parts = [{"raw": base64.b64encode("hello from a file".encode()).decode(), "mediaType": "text/plain"}]
    assert answer(task_of(rpc(bridge_with_grpc.url, "SendMessage", {"message": message_of_parts(parts)}))) == \
        "echo: hello from a file"
    wait_until(lambda: health(bridge_with_grpc)["running"] == 0, "no message left running")
