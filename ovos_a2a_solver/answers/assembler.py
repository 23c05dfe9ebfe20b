# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Turning what an agent sends back into the text to say, once.

Agents answer in many shapes: one Message; a Task snapshot; a stream of artifact chunks
(appended), of cumulative artifacts (each the whole text so far), of rewritten artifacts,
of several artifacts; only status messages; or the answer streamed in "working" status
messages, then given whole as an artifact (``answers.status_answer`` tells it from progress notes;
the artifact that repeats or extends it continues it, so nothing is said twice).
:class:`AnswerAssembler` takes the events in order and turns each into :class:`Revision` s:
"this text continues artifact K" or "artifact K now reads T". Two readers consume them:

* :class:`TextPieces` gives the text to show as it arrives (``stream_task``);
* :class:`answers.sentences.SentenceSpeaker` gives whole sentences to speak.

Every step costs time in proportion to the text the event carries, so a stream of many
small chunks costs time linear in its length.

An answer is held, and handed on, only up to ``max_chars`` characters: the event that would
pass them is cut at the last sentence (or word) boundary within them, a last piece says so
(the ``cut_line``), and :attr:`AnswerAssembler.cut` tells the reader to stop reading. What is
handed on counts every character a reader gives again: an artifact rewritten to another text
counts the text from where it differs, so an agent that keeps rewriting its answer is cut too.
"""
from __future__ import annotations

import re
from typing import Any, Callable

from a2a.types import Role, TaskState

from ovos_a2a_solver.answers.revisions import Revision
from ovos_a2a_solver.answers.status_answer import StatusAnswer, content as _content, progress_note
from ovos_a2a_solver.sentence_units import sentence_start
from ovos_a2a_solver.states import SETTLED, WAITING_FOR_USER

ARTIFACT_SEPARATOR = "\n"
_SENTENCE_END = re.compile(r"[.!?…][\"')\]’”»]*$")
_TAIL = 16  # characters of an artifact kept to decide how the next chunk joins it


def _joined(tail: str, chunk: str) -> str:
    """A streamed chunk as it joins text ending in ``tail``: a sentence that ends right where
    the next begins gets a space."""
    if tail and chunk and _SENTENCE_END.search(tail) and chunk[0].isupper():
        return " " + chunk
    return chunk


def _has_words(parts: Any) -> bool:
    """Whether any of the parts is text with more than spaces in it."""
    return any(part.WhichOneof("content") == "text" and not part.text.isspace() and part.text for part in parts)


def _text(parts: Any) -> str:
    """The parts as text, joined the way their chunks were streamed (an SDK server aggregates
    appended chunks into one artifact with a part per chunk). A file or link is described in a
    short sentence of its own; so is a data part, unless the parts have words: data beside words
    (the schema of the reply a question expects, a call's payload) is for programs, not said."""
    pieces: list[str] = []
    tail = ""
    words = _has_words(parts)
    for part in parts:
        kind = part.WhichOneof("content")
        if kind == "text":
            if not part.text:
                continue
            piece = _joined(tail, part.text)
        elif kind == "data" and words:
            continue
        else:
            piece = describe_part(part, kind)
            if not piece:
                continue
            if tail and not tail[-1].isspace():
                piece = " " + piece
        pieces.append(piece)
        tail = (tail + piece)[-_TAIL:]
    return "".join(pieces)


_DATA_FIELDS = 5     # fields of a data part named in its sentence
_DATA_VALUE = 40     # characters of one value


def describe_part(part: Any, kind: str | None = None) -> str:
    """A short readable sentence for a part that is not text: a file or link is named, data
    is summarised ("The agent sent data: temperature 21, unit celsius.")."""
    kind = kind or part.WhichOneof("content")
    if kind in ("raw", "url"):
        name = part.filename
        if not name and kind == "url":
            name = part.url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1] or part.url
        if not name:
            name = part.media_type or "without a name"
        return f"The agent sent a file, {name}."
    if kind == "data":
        from google.protobuf.json_format import MessageToDict

        return f"The agent sent {_describe_value(MessageToDict(part.data))}."
    return ""


#: The fields of a data part that may hold a question, in the order they are looked in.
QUESTION_FIELDS = ("question", "prompt", "message", "value")


def question_in(parts: Any) -> str:
    """The question carried by parts that are all data (LangGraph sends an interrupt's question
    as an "Interrupt" artifact ``{"id": ..., "value": "which city?"}``): the first string among
    their fields ``QUESTION_FIELDS``, or one level down (``{"value": {"question": ...}}``);
    "" when there is none. Said instead of the data's summary while the task waits for input."""
    if not parts or any(part.WhichOneof("content") != "data" for part in parts):
        return ""
    from google.protobuf.json_format import MessageToDict

    for part in parts:
        data = MessageToDict(part.data)
        for value in (data, *(data.get(key) for key in QUESTION_FIELDS if isinstance(data, dict))):
            if isinstance(value, dict):
                found = next((value[key] for key in QUESTION_FIELDS if isinstance(value.get(key), str)
                              and value[key].strip()), "")
                if found:
                    return found.strip()
    return ""


def _describe_value(value: Any) -> str:
    if isinstance(value, dict):
        if not value:
            return "empty data"
        items = [f"{key} {_short(value[key])}" for key in sorted(value)[:_DATA_FIELDS]]  # a Struct keeps no order
        more = len(value) - _DATA_FIELDS
        return "data: " + ", ".join(items) + (f", and {more} more" if more > 0 else "")
    if isinstance(value, list):
        return f"a list of {len(value)} item{'' if len(value) == 1 else 's'}"
    return f"data: {_short(value)}"


def _short(value: Any) -> str:
    if isinstance(value, dict):
        return f"({len(value)} field{'' if len(value) == 1 else 's'})"
    if isinstance(value, list):
        return f"({len(value)} item{'' if len(value) == 1 else 's'})"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool):
        value = "yes" if value else "no"
    text = "nothing" if value is None else str(value)
    return text if len(text) <= _DATA_VALUE else text[:_DATA_VALUE - 1].rstrip() + "…"


class _Piece:
    """One artifact's text, kept as chunks so that appending costs only the chunk."""

    __slots__ = ("chunks", "tail", "length")

    def __init__(self) -> None:
        self.chunks: list[str] = []
        self.tail = ""
        self.length = 0

    def append(self, chunk: str) -> None:
        self.chunks.append(chunk)
        self.tail = (self.tail + chunk)[-_TAIL:]
        self.length += len(chunk)

    def replace(self, text: str) -> None:
        self.chunks = [text] if text else []
        self.tail = text[-_TAIL:]
        self.length = len(text)

    @property
    def text(self) -> str:
        if len(self.chunks) > 1:
            self.chunks = ["".join(self.chunks)]
        return self.chunks[0] if self.chunks else ""


def _shared_length(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` begin with alike (compared in slices, not one by one)."""
    low, high = 0, min(len(a), len(b))
    if a[:high] == b[:high]:
        return high
    while low < high:  # a[:low] == b[:low], a[:high + 1] != b[:high + 1]
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _cut(text: str) -> str:
    """``text`` up to the end of its last complete sentence or line; without one, up to its
    last space; without one, whole."""
    from ovos_a2a_solver.sentence_units import split_units

    spans, _ = split_units(text)
    if spans:
        return text[:spans[-1][1]]
    space = max(text.rfind(" "), text.rfind("\n"), text.rfind("\t"))
    return text[:space] if space > 0 else text


#: The key of the piece that says the answer was cut (an artifact's is its id, a message's "message:<id>").
CUT_KEY = "cut:"
#: The key of the answer streamed in "working" status messages (and of the artifact that continues it).
STATUS_ANSWER_KEY = "status:working"
#: The key of the answer read from the task's history (only when nothing else gave a word).
HISTORY_KEY = "history"


class AnswerAssembler:
    """Collects one reply. ``feed`` turns each event into revisions; ``finish`` gives the
    last ones (an answer or question only in the status); ``final_text`` is the answer.

    ``max_chars``: the most characters of answer held, and handed on in revisions (a rewrite
    counts from where it differs; ``None``: no limit); the event that would pass it is cut,
    ``cut_line`` is added as a last piece, and :attr:`cut` is set: later events are ignored
    (the caller stops reading)."""

    def __init__(self, on_update: Callable[["AnswerAssembler"], None] | None = None,
                 max_chars: int | None = None, cut_line: str = "", given: dict[str, str] | None = None) -> None:
        self.task_id = ""
        self.context_id = ""
        self.state: int | None = None
        self.status_text = ""
        self.message_reply = False
        self.events = 0
        self.progress = ""  # a "working" status message the latest event carried, not read as answer
        self.note = ""      # a status update's metadata "note" (e.g. a bridge's heartbeat: "Still working (N s).")
        self.cut = False    # the answer passed max_chars: it was cut, and the rest is not read
        self.max_chars = max_chars
        self.cut_line = cut_line
        self._on_update = on_update
        self._pieces: dict[str, _Piece] = {}   # key -> its text as the agent has it now, in first-seen order
        self._held: dict[str, tuple[str, str, bool]] = {}  # key -> (data summary, question, last): see _whole
        self._asked: dict[str, str] = {}  # key -> the data summary of an artifact said as its question
        # key -> an artifact's text as the task had it when it last asked the user: a whole artifact
        # that still reads so (a continued task's snapshot repeats them) is not given again
        self.given = given or {}
        self.asked_id = ""  # the messageId of the user's message this reply answers (its place in a history)
        # the texts of the task's "working" status messages since that message, in order: those of the
        # newest task snapshot's history (and its status), then those streamed after it
        self._status_texts: list[str] = []
        self._status_chars = 0
        self._status_working = False   # status_text came with a "working" status (it may be a progress note)
        self._chars = 0     # characters in the pieces now
        self._handed = 0    # characters handed on in revisions so far (a rewrite from where it differs)
        self._status_answer = StatusAnswer()
        self._artifact_seen = False   # an agent that answers in artifacts: its status texts are progress
        self._continuing = ""         # the artifact that continues the status answer, once one came
        self._catching_up: _Piece | None = None  # its text while shorter than the status answer was
        self._status_length = 0

    def feed(self, event: Any) -> list[Revision]:
        """Take one ``StreamResponse``; return the revisions it makes (none once :attr:`cut`)."""
        self.events += 1
        if self.cut:
            return []
        self.progress = self.note = ""
        try:
            return self._feed(event)
        finally:
            if self._on_update is not None:
                self._on_update(self)

    def _feed(self, event: Any) -> list[Revision]:
        kind = event.WhichOneof("payload")
        if kind == "message":
            msg = event.message
            self._ids(msg.task_id, msg.context_id)
            self.message_reply = True
            return self._replace("message:" + msg.message_id, _text(msg.parts), last=True)
        if kind == "task":
            task = event.task
            self._ids(task.id, task.context_id)
            self._status(task.status)
            self._take_history(task)
            out = self._release()
            for n, artifact in enumerate(task.artifacts):
                out += self._artifact(artifact.artifact_id or f"#{n}", _without_repeat(artifact.parts), False, False)
            return out
        if kind == "status_update":
            update = event.status_update
            self._ids(update.task_id, update.context_id)
            note = update.metadata.fields.get("note") if update.HasField("metadata") else None
            self.note = note.string_value if note is not None else ""
            return self._status(update.status, streamed=True) + self._release()
        if kind == "artifact_update":
            update = event.artifact_update
            self._ids(update.task_id, update.context_id)
            key = update.artifact.artifact_id or "#0"
            out = self._release(key) if key in self._held else []
            return out + self._artifact(key, update.artifact.parts, update.append, update.last_chunk)
        return []

    def _artifact(self, key: str, parts: Any, append: bool, last: bool) -> list[Revision]:
        """An artifact's chunk, or its whole (:meth:`_whole`). The first artifact after an answer
        streamed in status messages continues that answer: while its text is shorter than what
        was streamed, the answer reads its text (a repeat says nothing new)."""
        self._artifact_seen = True
        chunk = _text(parts)
        if key == self._continuing or (not self._continuing and STATUS_ANSWER_KEY in self._pieces
                                       and key not in self._pieces):
            if not self._continuing:
                self._continuing, self._catching_up = key, _Piece()
                self._status_length = self._pieces[STATUS_ANSWER_KEY].length
            key, text = STATUS_ANSWER_KEY, self._catching_up
            if text is not None:
                if append:
                    text.append(_joined(text.tail, chunk))
                else:
                    text.replace(chunk)
                if text.length >= self._status_length:
                    self._catching_up = None  # caught up: the answer reads the artifact, chunks append
                return self._replace(key, text.text, last)
            if append and last and _repeats(self._pieces[key], chunk):
                return self._replace(key, chunk, last)
        if append and key in self._pieces:
            if last and _repeats(self._pieces[key], chunk):
                return self._whole(key, parts, last)  # the whole text again at its last chunk: a replacement
            return self._append(key, chunk, last)
        return self._whole(key, parts, last)

    def finish(self) -> list[Revision]:
        """Revisions still owed at the end: data held back (:meth:`_whole`); the final status
        message, as the whole of the answer streamed in status messages when it extends it, as
        the answer when nothing else gave a word (the task completed), or as the question (the
        task waits for the user); and, when no answer was said, the answer of the "working"
        status messages that no later text decided (the last of them, or those a task's history
        holds: :meth:`status_run`). A progress note is never said."""
        out = self._release(*self._held)
        if self.state is None or self.cut:
            return out
        completed = self.state == TaskState.TASK_STATE_COMPLETED
        waiting = self.state in WAITING_FOR_USER
        if not (completed or waiting):
            return out
        final = "" if self._status_working else self.status_text.strip()
        streamed = self._pieces.get(STATUS_ANSWER_KEY)
        if streamed is not None and not self._continuing:
            run = self.status_run()
            if final and _content(final).startswith(_content(streamed.text)):
                return out + self._replace(STATUS_ANSWER_KEY, final, last=True)
            if run and _content(run).startswith(_content(streamed.text)) and len(run) > streamed.length:
                out += self._replace(STATUS_ANSWER_KEY, run, last=True)  # texts only a snapshot brought
        if final and completed and not self.has_words:
            return out + self._replace("status", final, last=True)
        if not self.has_words:
            out += self._replace(HISTORY_KEY, self.status_run(), last=True)
        if final and waiting and final not in self.final_text():
            out += self._replace("status", final, last=True)
        return out

    @property
    def has_words(self) -> bool:
        """Whether the answer so far has anything to say (more than spaces)."""
        return any(piece.length and not piece.text.isspace() for piece in self._pieces.values())

    def status_run(self) -> str:
        """The answer the task's "working" status messages hold (those streamed, and those an
        a2a-sdk server moved into the task's history, which a blocking reply carries), read by
        the rule of ``answers.status_answer``: the run of texts that extend or continue each
        other, or else the last text unless it is a progress note. A blocking reply thus says
        what the stream of the same task would have said."""
        reading = StatusAnswer()
        for text in self._status_texts:
            reading.add(text)
        if not reading.answer and progress_note(reading.text):
            return ""
        return reading.text.strip()

    def ending_reason(self) -> str:
        """The agent's words for a task it failed, rejected or canceled: its status message, or
        else the last of its messages in the task's history."""
        return self.status_text or (self._status_texts[-1].strip() if self._status_texts else "")

    def final_text(self) -> str:
        """The whole answer as the agent has it now: each piece's text, in order."""
        out: list[str] = []
        for piece in self._pieces.values():
            text = piece.text
            if not text:
                continue
            if out and not out[-1].endswith(("\n", " ")):
                out.append(ARTIFACT_SEPARATOR)
                text = text.lstrip()
            out.append(text)
        return "".join(out)

    # ---- internals ----------------------------------------------------------------

    def _append(self, key: str, chunk: str, last: bool) -> list[Revision]:
        piece = self._pieces[key]
        chunk = _joined(piece.tail, chunk)
        if self.max_chars is not None and max(self._chars, self._handed) + len(chunk) > self.max_chars:
            return self._cut_piece(key, piece, piece.text + chunk[:self.max_chars - max(self._chars, self._handed)])
        piece.append(chunk)
        self._chars += len(chunk)
        self._handed += len(chunk)
        return [Revision(key, chunk, True, last)] if chunk or last else []

    def _replace(self, key: str, text: str, last: bool = False) -> list[Revision]:
        if self.cut:  # a later artifact of the same event
            return []
        piece = self._pieces.get(key)
        if piece is None:
            if not text:
                return []
            piece = self._pieces[key] = _Piece()
        others = self._chars - piece.length
        same = _shared_length(piece.text, text) if piece.length else 0
        if same < piece.length:  # rewritten: a reader gives it again from the sentence that changed
            same = sentence_start(text, same)
        if self.max_chars is not None and (others + len(text) > self.max_chars
                                           or self._handed + len(text) - same > self.max_chars):
            fits = min(self.max_chars - others, same + self.max_chars - self._handed)
            return self._cut_piece(key, piece, text[:max(fits, 0)])
        piece.replace(text)
        self._chars = others + len(text)
        self._handed += len(text) - same
        return [Revision(key, text, False, last)]

    def artifact_texts(self) -> dict[str, str]:
        """Each artifact's text as the agent has it now (the :attr:`given` of the task's next turn)."""
        return {key: self._asked.get(key, piece.text) for key, piece in self._pieces.items()
                if key not in ("status", HISTORY_KEY) and not key.startswith(("message:", CUT_KEY))}

    def _whole(self, key: str, parts: Any, last: bool = False) -> list[Revision]:
        """A whole artifact (none, when it reads as :attr:`given`). One made only of data that
        carries a question (:func:`question_in`) is that question while the task waits for
        input, else its summary; while the state may still come to that, it is held back
        until the task settles (or the answer ends)."""
        text = _text(parts)
        if self.given and self.given.get(key) == text:
            return []
        question = question_in(parts)
        if not question:
            return self._replace(key, text, last)
        self._asked[key] = text
        if self.state in WAITING_FOR_USER:
            return self._replace(key, question, last)
        self._held[key] = (text, question, last)
        return [] if self.state not in SETTLED else self._release(key)

    def _release(self, *keys: str) -> list[Revision]:
        """The held artifacts (``keys``, or all once the task settled): each its question while
        the task waits for input, else its summary."""
        if not self._held or not keys and self.state not in SETTLED:
            return []
        out: list[Revision] = []
        for key in keys or list(self._held):
            summary, question, last = self._held.pop(key)
            out += self._replace(key, question if self.state in WAITING_FOR_USER else summary, last)
        return out

    def _cut_piece(self, key: str, piece: _Piece, fits: str) -> list[Revision]:
        """The answer passed ``max_chars`` in this piece, of which ``fits`` is within them:
        the piece now reads up to the last sentence of that, and the line that says so
        follows as the answer's last piece."""
        text = _cut(fits)
        self._chars += len(text) - piece.length
        piece.replace(text)
        self.cut = True
        out = [Revision(key, text, False, True)]
        if self.cut_line:
            self._pieces[CUT_KEY] = line = _Piece()
            line.replace(self.cut_line)
            out.append(Revision(CUT_KEY, self.cut_line, False, True))
        return out

    def _ids(self, task_id: str, context_id: str) -> None:
        self.task_id = task_id or self.task_id
        self.context_id = context_id or self.context_id

    def _take_history(self, task: Any) -> None:
        """Take the "working" texts of a task snapshot: those of its history that follow the
        user's message (:attr:`asked_id`, or else the user's last message), and its status
        message while it works; up to ``max_chars`` characters (see :meth:`status_run`)."""
        history = task.history
        start = None
        for index in range(len(history) - 1, -1, -1):
            if self.asked_id and history[index].message_id == self.asked_id:
                start = index + 1
                break
        if start is None:  # the history does not hold the message: the agent's texts after the user's last
            start = next((index + 1 for index in range(len(history) - 1, -1, -1)
                          if history[index].role == Role.ROLE_USER), 0)
        messages = [message for message in history[start:] if message.role == Role.ROLE_AGENT]
        if task.status.state == TaskState.TASK_STATE_WORKING and task.status.HasField("message"):
            messages.append(task.status.message)
        texts, chars = [], 0
        for message in messages:
            if not _read_as_text(message.parts):
                continue
            texts.append(_text(message.parts))
            chars += len(texts[-1])
            if self.max_chars is not None and chars > self.max_chars:
                break
        self._status_texts, self._status_chars = texts, chars

    def _status(self, status: Any, streamed: bool = False) -> list[Revision]:
        """Take a status; a "working" one of a stream may carry the answer as it grows
        (``answers.status_answer``), until an artifact came."""
        if status.state:
            self.state = status.state
        if not status.HasField("message"):
            return []
        text = _text(status.message.parts)
        if not text:
            return []
        working = status.state == TaskState.TASK_STATE_WORKING
        if working and not _read_as_text(status.message.parts):
            self.progress = text  # data or files alone: progress, never the answer
            return []
        self.status_text = text if self.max_chars is None else text[:self.max_chars]
        self._status_working = working
        if not working:
            return []
        if streamed and (self.max_chars is None or self._status_chars <= self.max_chars):
            self._status_texts.append(self.status_text)  # held up to max_chars, as the history is
            self._status_chars += len(self.status_text)
        if streamed and not self._artifact_seen:
            change = self._status_answer.add(text)
            if self._status_answer.answer:
                if change is None:
                    return []
                chunk, append = change
                if append:
                    return self._append(STATUS_ANSWER_KEY, chunk, False)
                return self._replace(STATUS_ANSWER_KEY, chunk)
        self.progress = text
        return []


def _read_as_text(parts: Any) -> bool:
    """Whether a status message may carry the answer: words, and beside them only data (not said)."""
    return _has_words(parts) and all(part.WhichOneof("content") in ("text", "data") for part in parts)


def _without_repeat(parts: Any) -> Any:
    """An artifact's parts as a task holds them, without the chunks its last one repeats: the
    agent sent the whole text again, appended, in the chunk that closed it (a server appends
    it to what it had)."""
    texts = [index for index, part in enumerate(parts) if part.WhichOneof("content") == "text"]
    if len(texts) < 2:
        return parts
    before = _content("".join(parts[index].text for index in texts[:-1]))
    if not before or not _content(parts[texts[-1]].text).startswith(before):
        return parts
    return [part for index, part in enumerate(parts) if index not in texts[:-1]]


def _repeats(piece: "_Piece", chunk: str) -> bool:
    """Whether an appended ``chunk`` is the piece's whole text again (spaces aside), as some
    agents send the whole answer once more in the chunk that closes it."""
    said = _content(piece.text)
    return bool(said) and _content(chunk).startswith(said)


def _after_content(text: str, count: int) -> int:
    """The index in ``text`` just after its first ``count`` non-space characters."""
    if count == 0:
        return 0
    seen = 0
    for index, char in enumerate(text):
        if not char.isspace():
            seen += 1
            if seen == count:
                return index + 1
    return len(text)


class TextPieces:
    """Revisions -> the text to show, as it arrives; nothing shown twice.

    Appended chunks are given as sent; a piece that grows is given its new end; a piece
    rewritten differently is given again, on a new line, from the start of the sentence
    that changed. Spaces alone never count as a change. A new piece starts on a new line
    when the text so far does not end in a space.
    """

    def __init__(self) -> None:
        self._shown: dict[str, _Piece] = {}
        self._last_char = ""

    def add(self, revision: Revision) -> list[str]:
        shown = self._shown.get(revision.key)
        if shown is None:
            shown = self._shown[revision.key] = _Piece()
            text = revision.text
            if self._last_char and text and not self._last_char.isspace():
                text = ARTIFACT_SEPARATOR + text.lstrip()
            shown.append(revision.text)
            return self._give(text)
        if revision.append:
            shown.append(revision.text)
            return self._give(revision.text)
        before, now = shown.text, revision.text
        said, new = _content(before), _content(now)
        if said.startswith(new) and new != said:
            return []  # shortened: nothing new to say, and what was shown stays (it may grow back)
        shown.replace(now)
        if new.startswith(said):
            return self._give(now[_after_content(now, len(said)):])
        start = sentence_start(now, _after_content(now, len(_common_prefix(said, new))))
        return self._give(ARTIFACT_SEPARATOR + now[start:].lstrip())

    def _give(self, text: str) -> list[str]:
        if self._last_char.isspace():  # a space already shown is not shown again
            text = text.lstrip(" \t")
        if not text:
            return []
        self._last_char = text[-1]
        return [text]


def _common_prefix(a: str, b: str) -> str:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return a[:n]
