# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""What the bridge refuses in a parsed request, before any work is admitted.

The a2a-sdk parses requests leniently (unknown enum numbers are kept, a message from
the agent is taken like one from the user). These checks run in the request handler,
so they hold for every binding (JSON-RPC 1.0 and 0.3, HTTP+JSON, gRPC), and each
refusal is ``InvalidParamsError`` (-32602, HTTP 400, gRPC INVALID_ARGUMENT) naming the
field. What only the raw body shows (unknown enum names, invalid UTF-8, nesting) is
checked earlier, by ``wirecheck``.
"""
from __future__ import annotations

from a2a.types import ListTasksRequest, Message, Role, SendMessageRequest
from a2a.utils.errors import InvalidParamsError

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
    parts, a part without content, or an empty text part."""
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


def check_list_tasks(params: ListTasksRequest) -> None:
    """Refuse a ListTasks filter on a state that does not exist."""
    if params.status and params.status not in KNOWN:
        raise InvalidParamsError(message=f"status {params.status} is not a task state")
