"""A seeded generator of malformed A2A requests, every one of which a server must refuse.

    for case in malformed_requests(seed=7, count=500, bindings=("jsonrpc", "rest")):
        response = case.send(base_url)      # an httpx.Response
        verdict = judge(case, response)     # "refused", "internal" (-32603 / 5xx) or "accepted"

Each case starts from a valid request of one A2A operation and breaks it in one or two
ways chosen from a catalogue of changes that are invalid by the A2A 1.0 / ProtoJSON rules
(wrong JSON types, unknown enum names and numbers, missing required fields, messages not
from the user, empty or too many parts, invalid UTF-8, nesting 1000 deep, a 5000-digit
id, ...). Nothing here knows the server under test: the same cases are sent to the
bridge and to a bare a2a-sdk agent (``bench/bench_malformed.py``).

A correct answer is an error of the protocol: JSON-RPC ``error`` with a code other than
-32603 (internal error), or for HTTP+JSON a 4xx status with an error body. A -32603 or a
5xx is "internal"; a ``result``, an event stream or a 2xx is "accepted".
"""
from __future__ import annotations

import copy
import json
import random
import uuid
from dataclasses import dataclass, field
from urllib.parse import urlencode

import httpx

MAX_PARTS = 100  # the bridge's default max_parts; cases with more parts exceed it

V1 = {"A2A-Version": "1.0"}


@dataclass
class Case:
    """One malformed request."""

    binding: str                    # "jsonrpc" or "rest"
    operation: str                  # e.g. "SendMessage"
    changes: list[str]              # what was broken, readable
    http_method: str = "POST"
    path: str = ""                  # appended to the JSON-RPC URL (jsonrpc: "/"; rest: "/rest/...")
    body: bytes | None = None
    query: dict = field(default_factory=dict)
    headers: dict = field(default_factory=dict)

    def send(self, url: str, client: httpx.Client, timeout: float = 30) -> httpx.Response:
        """Send to ``url`` (the agent's JSON-RPC URL; REST paths hang under ``url + '/rest'``)."""
        target = url.rstrip("/") + self.path + (("?" + urlencode(self.query)) if self.query else "")
        headers = {**V1, "Content-Type": "application/json", **self.headers}
        return client.request(self.http_method, target, content=self.body, headers=headers, timeout=timeout)

    def __str__(self) -> str:
        return f"{self.binding} {self.operation}: {'; '.join(self.changes)}"


def judge(case: Case, response: httpx.Response) -> str:
    """``refused`` (a proper protocol error), ``internal`` (-32603 or 5xx) or ``accepted``."""
    if response.status_code >= 500:
        return "internal"
    if case.binding == "rest":
        if 400 <= response.status_code < 500:
            return "refused"
        return "accepted"
    if "text/event-stream" in response.headers.get("content-type", ""):
        return "accepted"
    try:
        body = response.json()
    except ValueError:
        return "internal"
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or "result" in body:
        return "accepted"
    return "internal" if error.get("code") == -32603 else "refused"


# ---- valid starting points -------------------------------------------------------------------

def _message(rng: random.Random) -> dict:
    return {"messageId": uuid.UUID(int=rng.getrandbits(128)).hex, "role": "ROLE_USER",
            "parts": [{"text": "hello"}]}


def _valid_params(operation: str, rng: random.Random) -> dict:
    task_id = "tck-" + uuid.UUID(int=rng.getrandbits(128)).hex
    return {
        "SendMessage": lambda: {"message": _message(rng)},
        "SendStreamingMessage": lambda: {"message": _message(rng)},
        "GetTask": lambda: {"id": task_id},
        "CancelTask": lambda: {"id": task_id},
        "SubscribeToTask": lambda: {"id": task_id},
        "ListTasks": lambda: {"pageSize": 10},
    }[operation]()


# ---- what breaks a request -----------------------------------------------------------------------
# (path in params, bad values): each value is invalid there by A2A 1.0 / ProtoJSON rules

WRONG_STRING = [5, 1.5, True, {}, [], ["x"]]
WRONG_OBJECT = [5, "x", True, [], [1]]
BAD_ROLES = ["ROLE_AGENT", "ROLE_UNSPECIFIED", "user", "x", 99, -1, 2, 1.5, {}, [], True]
BAD_PARTS = [[], "x", 5, {}, [1], ["x"], [{}], [{"text": ""}], [{"text": "   "}], [{"text": 5}],
             [{"text": {}}], [{"text": "a", "url": "b"}], [{"raw": "***"}], [{"data": 5, "text": "x"}],
             [{"text": "x"}] * (MAX_PARTS + 1)]
BAD_STATUS = ["x", "TASK_STATE_NOPE", "completed", 42, -3, 1.5, {}, []]

FIELD_CHANGES: dict[str, list[tuple[tuple, list]]] = {
    "SendMessage": [
        (("message",), [None, *WRONG_OBJECT]),
        (("message", "role"), BAD_ROLES),
        (("message", "parts"), BAD_PARTS),
        (("message", "messageId"), ["", *WRONG_STRING]),
        (("message", "taskId"), WRONG_STRING),
        (("message", "contextId"), WRONG_STRING),
        (("message", "metadata"), [5, "x", [], True]),
        (("configuration",), WRONG_OBJECT),
        (("configuration", "historyLength"), [-1, "x", 1.5, {}]),
        (("configuration", "returnImmediately"), ["x", 5, {}, []]),
        (("configuration", "acceptedOutputModes"), [5, {}, [5], [{}]]),
    ],
    "GetTask": [(("id",), ["", *WRONG_STRING]), (("historyLength",), [-1, "x", 1.5, {}])],
    "CancelTask": [(("id",), ["", *WRONG_STRING])],
    "SubscribeToTask": [(("id",), ["", *WRONG_STRING])],
    "ListTasks": [
        (("status",), BAD_STATUS),
        (("pageSize",), [-1, 101, "abc", 1.5, {}]),
        (("pageToken",), ["***not-a-token***", 5, {}]),
        (("historyLength",), [-1, "x", {}]),
        (("statusTimestampAfter",), ["yesterday", 5, {}]),
        (("contextId",), WRONG_STRING),
    ],
}
FIELD_CHANGES["SendStreamingMessage"] = FIELD_CHANGES["SendMessage"]
OPERATIONS = tuple(FIELD_CHANGES)

# changes to the whole JSON-RPC envelope (params stay valid)
ENVELOPE_CHANGES = [
    ("jsonrpc", ["1.0", 2, None, {}]),
    ("id", [{}, [], True, 1.5e300]),
    ("method", ["", 5, None, {}, "sendmessage", "tasks/nope", "SendMessage "]),
    ("params", [[], "x", 5, True]),
]


def _set(tree: dict, path: tuple, value) -> None:
    node = tree
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    node[path[-1]] = value


DEEP = "__deep__"  # stands for a value nested DEEP_LEVELS deep; written out by _dumps
DEEP_LEVELS = 1000


def _dumps(value) -> bytes:
    """JSON of ``value``, with the :data:`DEEP` marker replaced by ``{"a": {"a": ...}}`` 1000 deep
    (too deep for ``json.dumps`` itself)."""
    return json.dumps(value).replace(json.dumps(DEEP), '{"a":' * DEEP_LEVELS + '"bottom"' + "}" * DEEP_LEVELS).encode()


def _jsonrpc_body(operation: str, params, rng: random.Random) -> dict:
    return {"jsonrpc": "2.0", "id": rng.randrange(1, 10**6), "method": operation, "params": params}


def _byte_changes(body: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A change to the raw bytes: invalid UTF-8, or JSON cut short."""
    if rng.random() < 0.5:
        at = body.find(b"hello") if b"hello" in body else max(1, len(body) // 2)
        return body[:at] + b"\xff\xfe" + body[at:], "invalid UTF-8 in the body"
    return body[: rng.randrange(1, max(2, len(body) - 1))], "JSON cut short"


def _field_case(operation: str, rng: random.Random, changes: int) -> tuple[dict, list[str]]:
    params = _valid_params(operation, rng)
    said = []
    for _ in range(changes):
        path, values = rng.choice(FIELD_CHANGES[operation])
        value = copy.deepcopy(rng.choice(values))
        if value is None and path == ("message",):
            params.pop("message", None)
            said.append("message missing")
            continue
        _set(params, path, value)
        shown = json.dumps(value)[:40] if not (isinstance(value, list) and len(value) > 5) else f"{len(value)} parts"
        said.append(f"{'.'.join(path)} = {shown}")
    return params, said


def malformed_requests(seed: int, count: int, bindings=("jsonrpc", "rest")) -> list[Case]:
    """``count`` malformed requests, the same for the same ``seed``."""
    rng = random.Random(seed)
    cases = []
    while len(cases) < count:
        binding = rng.choice(bindings)
        operation = rng.choice(OPERATIONS)
        case = _jsonrpc_case(operation, rng) if binding == "jsonrpc" else _rest_case(operation, rng)
        if case is not None:
            cases.append(case)
    return cases


def _jsonrpc_case(operation: str, rng: random.Random) -> Case:
    roll = rng.random()
    if roll < 0.6:
        params, said = _field_case(operation, rng, 1 if rng.random() < 0.7 else 2)
        body = json.dumps(_jsonrpc_body(operation, params, rng)).encode()
    elif roll < 0.75:
        envelope = _jsonrpc_body(operation, _valid_params(operation, rng), rng)
        key, values = rng.choice(ENVELOPE_CHANGES)
        value = rng.choice(values)
        envelope[key] = value
        said = [f"{key} = {json.dumps(value)}"]
        body = json.dumps(envelope).encode()
    elif roll < 0.85:
        body, said = _byte_changes(json.dumps(_jsonrpc_body(operation, _valid_params(operation, rng), rng)).encode(),
                                   rng)
        said = [said]
    elif roll < 0.9:
        params = _valid_params(operation, rng)
        params["metadata"] = DEEP
        body, said = _dumps(_jsonrpc_body(operation, params, rng)), ["params nested 1000 deep"]
    elif roll < 0.95:
        text = json.dumps(_jsonrpc_body(operation, _valid_params(operation, rng), rng))
        body = text.replace('"id": ', '"id": ' + "9" * 5000 + ", \"_\": ", 1).encode()
        said = ["a 5000-digit id"]
    else:
        value = rng.choice([[], [1, 2], "x", 5, None, True])
        body, said = json.dumps(value).encode(), [f"the body is {json.dumps(value)}"]
    return Case("jsonrpc", operation, said, path="/", body=body)


REST_ROUTES = {
    "SendMessage": ("POST", "/rest/message:send"),
    "SendStreamingMessage": ("POST", "/rest/message:stream"),
    "GetTask": ("GET", "/rest/tasks/{id}"),
    "CancelTask": ("POST", "/rest/tasks/{id}:cancel"),
    "SubscribeToTask": ("GET", "/rest/tasks/{id}:subscribe"),
    "ListTasks": ("GET", "/rest/tasks"),
}


def _rest_case(operation: str, rng: random.Random) -> Case | None:
    http_method, path = REST_ROUTES[operation]
    if http_method == "POST" and "{id}" not in path:  # a JSON body
        roll = rng.random()
        if roll < 0.7:
            params, said = _field_case(operation, rng, 1 if rng.random() < 0.7 else 2)
            body = json.dumps(params).encode()
        elif roll < 0.85:
            body, change = _byte_changes(json.dumps(_valid_params(operation, rng)).encode(), rng)
            said = [change]
        else:
            params = _valid_params(operation, rng)
            params["message"]["metadata"] = DEEP
            body, said = _dumps(params), ["message.metadata nested 1000 deep"]
        return Case("rest", operation, said, http_method, path, body=body)
    if operation == "ListTasks":  # query parameters: all text, so only fields whose text can be wrong
        params, said = _field_case(operation, rng, 1)
        if "contextId" in params:
            return None
        query = {k: (json.dumps(v) if not isinstance(v, str) else v) for k, v in params.items()}
        return Case("rest", operation, said, http_method, path, query=query)
    if operation == "GetTask":
        value = rng.choice([-1, "x", 1.5])
        return Case("rest", operation, [f"historyLength = {value}"], http_method,
                    path.format(id="tck-" + uuid.UUID(int=rng.getrandbits(128)).hex),
                    query={"historyLength": str(value)})
    return None
