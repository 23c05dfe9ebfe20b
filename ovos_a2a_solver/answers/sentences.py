# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The answer's revisions -> whole sentences to speak, each as soon as it is complete.

A spoken unit is a sentence (it ends in ``.``, ``!``, ``?`` or ``…`` followed by a space,
not after an abbreviation such as "Dr." or an initial) or a line (a line break ends a unit,
so a poem is spoken line by line). Text at the very end of what arrived so far counts as
a finished sentence when it ends like one and is not a number ("3.") or an abbreviation;
anything else waits for more text, for the agent to say the piece is complete, for
another piece to start, or for the end of the answer. Text whose end is unsure, a period
after a number ("It costs 3.", which may go on as "3.5"), an initial ("J.") or a short
word ("Yes."), is said once no more text came within ``SENTENCE_GRACE`` seconds
(:meth:`SentenceSpeaker.unsure`, :meth:`SentenceSpeaker.settle`): a sentence is heard when
it ends, not when the next one starts. A period after a word that leads into the next one
("Dr.", "Mrs.", "e.g.") never ends a sentence by itself.

Each piece of the answer (artifact) is its own run of units. When the agent rewrites a
piece (``append: false``) differently from what was already spoken, it is spoken again
from the first unit that changed: only whole units, never the tail of a word. A rewrite
that changes only spaces, or only shortens the text, says nothing.

Splitting costs time linear in the text, since an answer is split on the event loop every
persona of the process shares: a period's word is read at most ``WORD_LOOKBACK``
characters back, a run of terminals is matched once, and a streamed piece is looked at
again only from where the last look could not decide.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from ovos_a2a_solver.answers.revisions import Revision

_TERMINALS = ".!?…"
_CLOSERS = "\"')]’”»"
_OPENERS = "\"'(“‘«["
# a run of terminals (from its first one: a run is looked at once), closing quotes or
# brackets, and a space after them; or a line break
_BOUNDARY = re.compile(r"(?<![.!?…])[.!?…]+[\"')\]’”»]*(?=\s)|\n")
# a run of terminals at the very end of the text that is not after a digit, a period, an
# initial ("J.") or a short capitalised word ("Dr.", "Mrs.")
_ENDS_SENTENCE = re.compile(r"(?<![\d.])(?<!\b[A-Z])(?<!\b[A-Z][a-z])(?<!\b[A-Z][a-z]{2})[.!?…]+[\"')\]’”»]*\s*$")
_ABBREVIATIONS = frozenset({"mr", "mrs", "ms", "dr", "st", "jr", "sr", "prof", "vs", "etc", "e.g", "i.e", "mt",
                            "no", "fig", "approx"})
#: the abbreviations that lead into the word after them, so never end a sentence ("etc.",
#: "Jr." may)
_LEADING = _ABBREVIATIONS - {"etc", "jr", "sr"}
#: Seconds that text whose end is unsure ("It costs 3.") waits for more before it is said.
SENTENCE_GRACE = 0.3
#: How far back from a period the word before it is read: an abbreviation is a few letters
#: (after any opening quotes), so a longer word never is one, and no period costs more.
WORD_LOOKBACK = 32
_SCAN = re.compile(r"[.!?…\n]")
_PUNCTUATED_END = re.compile(r"[.!?…][\"')\]’”»]*$")


def _abbreviation(text: str, end: int) -> bool:
    """Whether the ``.`` at ``end`` closes an abbreviation or an initial, not a sentence.

    The word is what precedes the period back to a space, at most ``WORD_LOOKBACK``
    characters, without opening quotes or brackets; for a period that starts a line, the
    word that ends the line before."""
    if end and text[end - 1] == "\n":
        end -= 1
    word = _word_before(text, end)
    if len(word) == 1 and word.isupper():
        return True
    return word.lower() in _ABBREVIATIONS


def _word_before(text: str, end: int) -> str:
    """The word that ends at ``end``: back to a space, at most ``WORD_LOOKBACK`` characters,
    without opening quotes or brackets."""
    start = end
    lowest = max(0, end - WORD_LOOKBACK)
    while start > lowest and not text[start - 1].isspace():
        start -= 1
    return text[start:end].lstrip(_OPENERS)


def _unsure_end(tail: str) -> bool:
    """Whether text ending in ``tail``, which :func:`split_units` did not call finished,
    ends like a sentence all the same: in terminals that do not close a leading
    abbreviation ("Dr.")."""
    end = len(tail.rstrip())
    while end and tail[end - 1] in _CLOSERS:
        end -= 1
    first = end
    while first and tail[first - 1] in _TERMINALS:
        first -= 1
    if first == end:
        return False
    return tail[first:end] != "." or _word_before(tail, first).lower() not in _LEADING


def _ends_like_sentence(text: str, start: int) -> bool:
    """Whether ``text[start:]`` ends like a finished sentence (see ``_ENDS_SENTENCE``).

    Only the run of terminals at the end is looked at: the pattern is tried at the run's
    first character; at any later one it holds unless the character before is a period."""
    end = len(text)
    while end > start and text[end - 1].isspace():
        end -= 1
    while end > start and text[end - 1] in _CLOSERS:
        end -= 1
    first = end
    while first > start and text[first - 1] in _TERMINALS:
        first -= 1
    if first == end:
        return False
    if _ENDS_SENTENCE.match(text, first):
        return True
    return bool(text[first:end - 1].strip("."))


def split_units(text: str, scan_from: int = 0) -> tuple[list[tuple[int, int]], int]:
    """The complete units of ``text`` as (start, end) spans, and where the unfinished rest starts.

    ``scan_from``: where to look for the first unit's end, when the text before it was
    looked at already and held none (see :func:`resume_point`); the first unit still
    starts at 0. Costs time in proportion to the text looked at."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _BOUNDARY.finditer(text, scan_from):
        if match.group() != "\n" and match.group()[0] == "." and _abbreviation(text, match.start()):
            continue
        end = match.end()
        if text[start:end].strip():
            spans.append((start, end))
        start = end
    if text[start:].strip() and _ends_like_sentence(text, start):
        spans.append((start, len(text)))
        start = len(text)
    return spans, start


def resume_point(rest: str) -> int:
    """Where a later look for a unit's end in ``rest`` + more text may start: ``rest`` held
    none, and only its closing run of terminals and quotes may yet become one (by a space
    after it)."""
    index = len(rest)
    while index > 0 and rest[index - 1] in _CLOSERS:
        index -= 1
    while index > 0 and rest[index - 1] in _TERMINALS:
        index -= 1
    return index


def sentence_start(text: str, position: int) -> int:
    """Where the unit of ``text`` that holds ``position`` starts."""
    spans, rest = split_units(text)
    for start, end in spans:
        if position < end:
            return _skip_space(text, start)
    return _skip_space(text, rest)


def _skip_space(text: str, index: int) -> int:
    while index < len(text) and text[index].isspace():
        index += 1
    return index


def _norm(unit: str) -> str:
    return " ".join(unit.split())


class _Spoken:
    """What was spoken of one piece, and its text since the last spoken unit."""

    __slots__ = ("units", "rest", "tail", "scanned")

    def __init__(self) -> None:
        self.units: list[str] = []   # spoken units, spaces normalised
        self.rest: list[str] = []    # text after them, in chunks
        self.tail = ""               # the rest's last characters
        self.scanned = 0             # where in the rest a unit's end may yet be found


class SentenceSpeaker:
    """Revisions in, whole units to speak out, in order; nothing said twice, no fragments."""

    def __init__(self) -> None:
        self._pieces: dict[str, _Spoken] = {}

    def add(self, revision: Revision) -> list[str]:
        out: list[str] = []
        piece = self._pieces.get(revision.key)
        if piece is None:
            for other in self._pieces.values():  # a new piece starts a new unit
                out += self._flush(other)
            piece = self._pieces[revision.key] = _Spoken()
            revision = Revision(revision.key, revision.text, False, revision.last)
        if revision.append:
            out += self._append(piece, revision.text)
        else:
            out += self._replace(piece, revision.text)
        if revision.last:
            out += self._flush(piece)
        return out

    def unsure(self) -> bool:
        """Whether a piece's text so far may be a finished sentence, or may go on: it ends in
        a period after a number ("It costs 3.", or "3." of "3.5"), an initial or a short word.
        Said by :meth:`settle` once no more text came within ``SENTENCE_GRACE``."""
        return any(piece.rest and _unsure_end(piece.tail) for piece in self._pieces.values())

    def settle(self) -> list[str]:
        """The unsure ends (see :meth:`unsure`), said now: no more text came for them."""
        out: list[str] = []
        for piece in self._pieces.values():
            if piece.rest and _unsure_end(piece.tail):
                out += self._flush(piece)
        return out

    def finish(self) -> list[str]:
        """The units still owed at the end of the answer."""
        out: list[str] = []
        for piece in self._pieces.values():
            out += self._flush(piece)
        return out

    # ---- internals ----------------------------------------------------------------

    def _append(self, piece: _Spoken, chunk: str) -> list[str]:
        if not chunk:
            return []
        piece.rest.append(chunk)
        ended = bool(_PUNCTUATED_END.search(piece.tail.rstrip()))
        piece.tail = (piece.tail + chunk)[-16:]
        if not (_SCAN.search(chunk) or (ended and any(c.isspace() for c in chunk))):
            return []  # no unit can have ended: nothing to look at
        return self._speak_complete(piece, "".join(piece.rest))

    def _speak_complete(self, piece: _Spoken, text: str) -> list[str]:
        spans, rest = split_units(text, piece.scanned)  # what was looked at already is not again
        out = [text[s:e].strip() for s, e in spans]
        piece.units += [_norm(u) for u in out]
        self._keep_rest(piece, text[rest:])
        return out

    @staticmethod
    def _keep_rest(piece: _Spoken, rest: str) -> None:
        piece.rest = [rest] if rest else []
        piece.tail = rest[-16:]
        piece.scanned = resume_point(rest)

    def _replace(self, piece: _Spoken, text: str) -> list[str]:
        spans, rest = split_units(text)
        units = [text[s:e].strip() for s, e in spans]
        same = 0
        while same < len(piece.units) and same < len(units) and piece.units[same] == _norm(units[same]):
            same += 1
        if same < len(piece.units):
            said = "".join("".join(piece.units).split())
            if said.startswith("".join(text.split())):
                return []  # shortened (or only spaces changed): nothing new to say
        out = units[same:]
        piece.units = piece.units[:same] + [_norm(u) for u in out]
        self._keep_rest(piece, text[rest:])
        return out

    def _flush(self, piece: _Spoken) -> list[str]:
        unit = "".join(piece.rest).strip()
        piece.rest, piece.tail, piece.scanned = [], "", 0
        if not unit:
            return []
        piece.units.append(_norm(unit))
        return [unit]


def speak(revisions: Iterable[Revision]) -> Iterator[str]:
    """Yield the units of an answer's revisions in order, each as soon as it is complete."""
    speaker = SentenceSpeaker()
    for revision in revisions:
        yield from speaker.add(revision)
    yield from speaker.finish()
