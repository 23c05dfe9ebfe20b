"""A seeded generator of malformed A2A requests, every one of which a server must refuse.

    for case in malformed_requests(seed=7, count=500, bindings=("jsonrpc", "jsonrpc03", "rest", "grpc")):
        response = case.send(base_url, client, grpc_target)  # an httpx.Response, or a GrpcAnswer
        verdict = judge(case, response)     # "refused", "internal" (-32603 / 5xx) or "accepted"

Each case starts from a valid request of one A2A operation and breaks it in one or two
ways chosen from a catalogue of changes that are invalid by the A2A 1.0 / ProtoJSON rules
(wrong JSON types, unknown enum names and numbers, missing required fields, messages not
from the user, empty or too many parts, invalid UTF-8, nesting 1000 deep, a 5000-digit
id, lone UTF-16 surrogates, A2A versions not served, ...). The bindings: JSON-RPC with
A2A 1.0 methods (``jsonrpc``) and with A2A 0.3 methods (``jsonrpc03``), HTTP+JSON
(``rest``) and gRPC (``grpc``: protobuf messages, some with bytes that are not one).
Nothing here knows the server under test: the JSON-RPC 1.0 and HTTP+JSON cases are sent to
the bridge and to a bare a2a-sdk agent (``bench/bench_hostile.py``).

A correct answer is an error of the protocol: JSON-RPC ``error`` with a code other than
-32603 (internal error), for HTTP+JSON a 4xx status with an error body, for gRPC a status
other than OK, ``UNKNOWN`` and ``INTERNAL``. A -32603, a 5xx, ``UNKNOWN`` or ``INTERNAL``
is "internal"; a ``result``, an event stream, a 2xx or OK is "accepted".
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
class GrpcAnswer:
    """How a gRPC call ended: its status code's name (``OK``, ``INVALID_ARGUMENT`` ...) and details."""

    code: str
    details: str

    @property
    def status_code(self) -> str:
        return self.code

    @property
    def text(self) -> str:
        return self.details


@dataclass
class Case:
    """One malformed request."""

    binding: str                    # "jsonrpc", "jsonrpc03", "rest" or "grpc"
    operation: str                  # e.g. "SendMessage"
    changes: list[str]              # what was broken, readable
    http_method: str = "POST"
    path: str = ""                  # appended to the JSON-RPC URL (jsonrpc: "/"; rest: "/rest/..."); gRPC: the method
    body: bytes | None = None       # gRPC: the serialized request
    query: dict = field(default_factory=dict)
    headers: dict = field(default_factory=dict)  # replace the defaults; a value None drops the header

    def send(self, url: str, client: httpx.Client, grpc_target: str | None = None,
             timeout: float = 30) -> httpx.Response | GrpcAnswer:
        """Send to ``url`` (the agent's JSON-RPC URL; REST paths hang under ``url + '/rest'``),
        or a gRPC case to ``grpc_target`` (``host:port``)."""
        if self.binding == "grpc":
            return self._send_grpc(grpc_target, timeout)
        target = url.rstrip("/") + self.path + (("?" + urlencode(self.query)) if self.query else "")
        defaults = {"Content-Type": "application/json", **({} if self.binding == "jsonrpc03" else V1)}
        headers = {k: v for k, v in {**defaults, **self.headers}.items() if v is not None}
        return client.request(self.http_method, target, content=self.body, headers=headers, timeout=timeout)

    def _send_grpc(self, target: str, timeout: float) -> GrpcAnswer:
        import grpc

        metadata = tuple((k, v) for k, v in {"a2a-version": "1.0", **self.headers}.items() if v is not None)
        with grpc.insecure_channel(target) as channel:
            method = f"/lf.a2a.v1.A2AService/{self.operation}"
            streaming = self.operation in ("SendStreamingMessage", "SubscribeToTask")
            call = (channel.unary_stream if streaming else channel.unary_unary)(
                method, request_serializer=lambda raw: raw, response_deserializer=lambda raw: raw)
            try:
                answer = call(self.body, metadata=metadata, timeout=timeout)
                if streaming:
                    list(answer)
            except grpc.RpcError as error:
                return GrpcAnswer(error.code().name, error.details() or "")
        return GrpcAnswer("OK", "")

    def __str__(self) -> str:
        return f"{self.binding} {self.operation}: {'; '.join(self.changes)}"


def judge(case: Case, response: httpx.Response | GrpcAnswer) -> str:
    """``refused`` (a proper protocol error), ``internal`` (-32603, 5xx, gRPC ``UNKNOWN`` or
    ``INTERNAL``) or ``accepted``."""
    if isinstance(response, GrpcAnswer):
        return {"OK": "accepted", "UNKNOWN": "internal", "INTERNAL": "internal"}.get(response.code, "refused")
    if response.status_code >= 500:
        return "internal"
    if case.binding == "rest":
        if 400 <= response.status_code < 500:
            return "refused"
        return "accepted"
    try:
        if "text/event-stream" in response.headers.get("content-type", ""):  # judged by its first event
            first = next((line for line in response.text.splitlines() if line.startswith("data:")), None)
            body = json.loads(first[5:]) if first is not None else {"result": "an empty stream"}
        else:
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
    makers = {"jsonrpc": _jsonrpc_case, "jsonrpc03": _jsonrpc03_case, "rest": _rest_case, "grpc": _grpc_case}
    cases = []
    while len(cases) < count:
        binding = rng.choice(bindings)
        operations = V03_OPERATIONS if binding == "jsonrpc03" else OPERATIONS
        case = makers[binding](rng.choice(operations), rng)
        if case is not None:
            cases.append(case)
    return cases


# ---- lone surrogates and versions: the same for every JSON binding -----------------------------

MARK = "@@lone@@"  # stands for a lone UTF-16 surrogate escape until the JSON is written
LONE_SURROGATES = ["\\ud800", "\\udfff", "\\udc00\\ud800", "\\ud83d"]  # the last: a pair's first half alone
BAD_VERSIONS = [None, "", "0.3", "0.9", "1.1", "2.0", "x", "1.0.0.0"]  # None: no A2A-Version at all


def _string_paths(tree, prefix=()) -> list[tuple]:
    if isinstance(tree, dict):
        return [p for key, value in tree.items() for p in _string_paths(value, prefix + (key,))]
    if isinstance(tree, list):
        return [p for n, value in enumerate(tree) for p in _string_paths(value, prefix + (n,))]
    return [prefix] if isinstance(tree, str) else []


def _with_lone_surrogate(document: dict, rng: random.Random, paths: list[tuple]) -> tuple[bytes, str]:
    """``document`` as JSON with a lone surrogate escape in one of its strings (or a new key)."""
    document = copy.deepcopy(document)
    escape = rng.choice(LONE_SURROGATES)
    if not paths or rng.random() < 0.2:
        holder = document["params"] if isinstance(document.get("params"), dict) else document
        holder.setdefault("metadata", {})[MARK] = 1
        where = f"a metadata key holds {escape}"
    else:
        path = rng.choice(paths)
        node = document
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = "a" + MARK + "b"
        where = f"{'.'.join(map(str, path))} holds {escape}"
    return json.dumps(document).replace(MARK, escape).encode(), where


def _jsonrpc_case(operation: str, rng: random.Random) -> Case:
    extra = rng.random()
    if extra < 0.1:
        envelope = _jsonrpc_body(operation, _valid_params(operation, rng), rng)
        paths = [("id",)] * (rng.random() < 0.3) or [("params", *p) for p in _string_paths(envelope["params"])]
        envelope["id"] = str(envelope["id"])
        body, where = _with_lone_surrogate(envelope, rng, paths)
        return Case("jsonrpc", operation, [where], path="/", body=body)
    if extra < 0.2 and operation != "SendStreamingMessage":
        version = rng.choice(BAD_VERSIONS)
        body = json.dumps(_jsonrpc_body(operation, _valid_params(operation, rng), rng)).encode()
        return Case("jsonrpc", operation, [f"A2A-Version: {version!r}"], path="/", body=body,
                    headers={"A2A-Version": version})
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


V03_OPERATIONS = ("message/send", "message/stream", "tasks/get", "tasks/cancel", "tasks/resubscribe")


def _v03_params(operation: str, rng: random.Random) -> dict:
    if operation.startswith("message/"):
        return {"message": {"kind": "message", "role": "user", "messageId": uuid.UUID(int=rng.getrandbits(128)).hex,
                            "parts": [{"kind": "text", "text": "hello"}]}}
    return {"id": "tck-" + uuid.UUID(int=rng.getrandbits(128)).hex}


V03_FIELD_CHANGES = {
    "message": [
        (("message",), [5, "x", [], True]),
        (("message", "parts"), ["invalid", 5, {}, [5], [{}], [{"kind": "text"}], [{"kind": "nope", "text": "x"}]]),
        (("message", "role"), ["agent", "nobody", 5, None]),
        (("message", "kind"), ["task", 5]),
        (("message", "messageId"), [5, {}, [], None]),
    ],
    "tasks": [(("id",), [5, {}, [], None, True])],
    "tasks/get": [(("id",), [5, {}, [], None, True]), (("historyLength",), ["x", {}, []])],
}


def _jsonrpc03_case(operation: str, rng: random.Random) -> Case:
    """A broken A2A 0.3 request (sent without A2A-Version, as 0.3 clients do, unless the change is the version)."""
    params = _v03_params(operation, rng)
    envelope = {"jsonrpc": "2.0", "id": f"r-{rng.randrange(10**6)}", "method": operation, "params": params}
    roll = rng.random()
    if roll < 0.5:
        path, values = rng.choice(V03_FIELD_CHANGES.get(operation) or V03_FIELD_CHANGES[operation.split("/")[0]])
        value = copy.deepcopy(rng.choice(values))
        _set(params, path, value)
        return Case("jsonrpc03", operation, [f"{'.'.join(path)} = {json.dumps(value)[:40]}"], path="/",
                    body=json.dumps(envelope).encode())
    if roll < 0.65:
        paths = [("id",)] * (rng.random() < 0.3) or [("params", *p) for p in _string_paths(params)]
        body, where = _with_lone_surrogate(envelope, rng, paths)
        return Case("jsonrpc03", operation, [where], path="/", body=body)
    if roll < 0.75:
        envelope["id"] = None
        return Case("jsonrpc03", operation, ["id = null"], path="/", body=json.dumps(envelope).encode())
    if roll < 0.9:
        version = rng.choice(["1.0", "0.9", "2.0", "x", "0.3.x"])
        return Case("jsonrpc03", operation, [f"A2A-Version: {version!r}"], path="/",
                    body=json.dumps(envelope).encode(), headers={"A2A-Version": version})
    body, change = _byte_changes(json.dumps(envelope).encode(), rng)
    return Case("jsonrpc03", operation, [change], path="/", body=body)


# ---- gRPC --------------------------------------------------------------------------------------

def _grpc_case(operation: str, rng: random.Random) -> Case | None:
    """A broken gRPC request: bytes that are not the message, a string that is not UTF-8, a
    value the protocol refuses, too many values, or an A2A version gRPC does not serve."""
    from a2a.types import a2a_pb2
    from google.protobuf.json_format import ParseDict

    request_type = {"SendMessage": a2a_pb2.SendMessageRequest, "SendStreamingMessage": a2a_pb2.SendMessageRequest,
                    "GetTask": a2a_pb2.GetTaskRequest, "CancelTask": a2a_pb2.CancelTaskRequest,
                    "SubscribeToTask": a2a_pb2.SubscribeToTaskRequest,
                    "ListTasks": a2a_pb2.ListTasksRequest}[operation]
    params = _valid_params(operation, rng)
    roll = rng.random()
    headers: dict = {}
    if roll < 0.3:
        version = rng.choice(BAD_VERSIONS)
        headers, said = {"a2a-version": version}, [f"a2a-version: {version!r}"]
        body = ParseDict(params, request_type()).SerializeToString()
    elif roll < 0.55 and operation != "ListTasks":
        valid = ParseDict(params, request_type()).SerializeToString()
        text = b"hello" if b"hello" in valid else b"tck-"
        bad = rng.choice([b"\xff\xfe", b"\xed\xa0", b"\xc3("])  # not UTF-8; the middle one a surrogate's
        body = valid.replace(text, bad + text[len(bad):], 1)
        said = [f"a string field holds {bad!r} (not UTF-8)"]
    elif roll < 0.7 and operation in ("SendMessage", "SendStreamingMessage"):
        valid = ParseDict(params, request_type()).SerializeToString()
        body, said = valid[: rng.randrange(0, len(valid) - 1)], ["the message cut short"]
    elif roll < 0.8 and operation in ("SendMessage", "SendStreamingMessage"):
        params["message"]["metadata"] = {f"k{n}": {"n": n} for n in range(2000)}
        body, said = ParseDict(params, request_type()).SerializeToString(), ["metadata of 2000 objects"]
    else:
        message = ParseDict(params, request_type())
        if operation == "ListTasks":
            key, value = rng.choice([("status", 42), ("page_size", -1), ("page_size", 101)])
            setattr(message, key, value)
        elif operation in ("SendMessage", "SendStreamingMessage"):
            key, value = rng.choice([("role", 2), ("role", 99), ("parts", []), ("text", " ")])
            if key == "role":
                message.message.role = value
            elif key == "parts":
                del message.message.parts[:]
            else:
                message.message.parts[0].text = value
        else:
            return None
        body, said = message.SerializeToString(), [f"{key} = {json.dumps(value)}"]
    return Case("grpc", operation, said, body=body, headers=headers)


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
    extra = rng.random()
    if extra < 0.1 and operation in ("SendMessage", "SendStreamingMessage"):
        params = _valid_params(operation, rng)
        body, where = _with_lone_surrogate(params, rng, _string_paths(params))
        return Case("rest", operation, [where], http_method, path, body=body)
    if extra < 0.2 and operation != "SendStreamingMessage":
        version = rng.choice(BAD_VERSIONS)
        task_path = path.format(id="tck-" + uuid.UUID(int=rng.getrandbits(128)).hex)
        body = json.dumps(_valid_params(operation, rng)).encode() if "{id}" not in path and http_method == "POST" \
            else None
        return Case("rest", operation, [f"A2A-Version: {version!r}"], http_method, task_path, body=body,
                    headers={"A2A-Version": version})
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
