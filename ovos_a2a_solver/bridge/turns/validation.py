# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""What the bridge refuses in a parsed request, before any work is admitted.

The a2a-sdk parses requests leniently (unknown enum numbers are kept, a message from
the agent is taken like one from the user). These checks run in the request handler,
so they hold for every binding (JSON-RPC 1.0 and 0.3, HTTP+JSON, gRPC), and each
refusal is ``InvalidParamsError`` (-32602, HTTP 400, gRPC INVALID_ARGUMENT) naming the
field, but for a message with nothing in words (:func:`user_text`), which is
``ContentTypeNotSupportedError`` (-32005, HTTP 415, gRPC INVALID_ARGUMENT) naming the
media types the card takes. What only the raw body shows (unknown enum names, invalid
UTF-8, nesting) is checked earlier, by ``wirecheck``.
"""
from __future__ import annotations

from a2a.types import ListTasksRequest, Message, Part, Role, SendMessageRequest
from a2a.utils.errors import ContentTypeNotSupportedError, InvalidParamsError

from ovos_a2a_solver.bridge.config import INPUT_MODES
from ovos_a2a_solver.states import KNOWN


def check_send(params: SendMessageRequest, max_parts: int) -> None:
    """Refuse a SendMessage the bridge does not take: every field the protocol requires
    (what the SDK's ``validate_request_params`` checks, here with the field's name in the
    error, so that the request handler need not run that generic walk twice), then
    :func:`check_message`."""
    if not params.HasField("message"):
        raise InvalidParamsError(message="message is missing")
    if not params.message.message_id:
        raise InvalidParamsError(message="message.messageId is empty: every message needs an id of its own")
    check_message(params.message, max_parts)
    if params.configuration.HasField("task_push_notification_config"):
        webhook = params.configuration.task_push_notification_config
        if not webhook.url:
            raise InvalidParamsError(message="configuration.taskPushNotificationConfig.url is empty")
        if webhook.HasField("authentication") and not webhook.authentication.scheme:
            raise InvalidParamsError(
                message="configuration.taskPushNotificationConfig.authentication.scheme is empty")


def check_message(message: Message, max_parts: int) -> None:
    """Refuse a message the persona cannot be asked: not from the user, no parts, too many
    parts, a part without content, an empty text part, or no part in words (only data, or
    files of other media types than :data:`INPUT_MODES`)."""
    if message.role != Role.ROLE_USER:
        name = Role.Name(message.role) if message.role in Role.values() else str(message.role)
        raise InvalidParamsError(message=f"message.role must be ROLE_USER (a message from the user), not {name}")
    if not message.parts:
        raise InvalidParamsError(message="message.parts is empty: send at least one text part")
    if len(message.parts) > max_parts:
        raise InvalidParamsError(message=f"message has {len(message.parts)} parts; at most {max_parts} are accepted")
    for n, part in enumerate(message.parts):
        kind = part.WhichOneof("content")
        if kind is None:
            raise InvalidParamsError(message=f"message.parts[{n}] has no content (text, raw, url or data)")
        if kind == "text" and not part.text.strip():
            raise InvalidParamsError(message=f"message.parts[{n}] is an empty text part")
    if not any(_in_words(part) for part in message.parts):
        kinds = sorted({_kind(part) for part in message.parts})
        raise ContentTypeNotSupportedError(
            message=f"this agent is asked in words: it takes {', '.join(INPUT_MODES)} (the card's "
                    f"defaultInputModes), and the message holds only {' and '.join(kinds)}; send a text part")


def user_text(message: Message) -> str:
    """What the persona is asked: the message's text parts, and its files of a media type of
    :data:`INPUT_MODES` sent inline, one per line. Data parts and other files are left out."""
    return "\n".join(_words(part) for part in message.parts if _in_words(part))


def _media_type(part: Part) -> str:
    return part.media_type.split(";", 1)[0].strip().lower()


def _in_words(part: Part) -> bool:
    kind = part.WhichOneof("content")
    return kind == "text" or (kind == "raw" and _media_type(part) in INPUT_MODES and _words(part).strip() != "")


def _words(part: Part) -> str:
    if part.WhichOneof("content") == "text":
        return part.text
    return part.raw.decode("utf-8", errors="replace")


def _kind(part: Part) -> str:
    kind = part.WhichOneof("content")
    if kind == "data":
        return "data"
    return f"a file ({_media_type(part) or 'no media type'})" if kind in ("raw", "url") else str(kind)


def check_list_tasks(params: ListTasksRequest) -> None:
    """Refuse a ListTasks filter on a state that does not exist."""
    if params.status and params.status not in KNOWN:
        raise InvalidParamsError(message=f"status {params.status} is not a task state")
