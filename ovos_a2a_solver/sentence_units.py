# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Where a text's spoken units end, for both ways the package speaks: the plugin says an agent's
answer sentence by sentence as it streams in (``answers.sentences``), and the RiveScript engine
says its whole reply the same way (:func:`units_of`). A shared leaf module (the standard
library only).

A spoken unit is a sentence (it ends in ``.``, ``!``, ``?`` or ``…`` followed by a space,
not after an abbreviation such as "Dr." or an initial) or a line (a line break ends a unit,
so a poem is spoken line by line). Text at the very end of what arrived so far counts as
a finished sentence when it ends like one and is not a number ("3.") or an abbreviation;
anything else waits for more text. A period after a number ("It costs 3.", which may go on
as "3.5"), an initial ("J.") or a short word ("Yes.") leaves the end unsure
(:func:`unsure_end`). A period after a word that leads into the next one ("Dr.", "Mrs.",
"e.g.") never ends a sentence by itself.

Splitting costs time linear in the text, since an answer is split on the event loop every
persona of the process shares: a period's word is read at most ``WORD_LOOKBACK``
characters back, a run of terminals is matched once, and a streamed piece is looked at
again only from where the last look could not decide (:func:`resume_point`).
"""
from __future__ import annotations

import re

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
#: How far back from a period the word before it is read: an abbreviation is a few letters
#: (after any opening quotes), so a longer word never is one, and no period costs more.
WORD_LOOKBACK = 32
MAY_END_UNIT = re.compile(r"[.!?…\n]")
PUNCTUATED_END = re.compile(r"[.!?…][\"')\]’”»]*$")


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


def unsure_end(tail: str) -> bool:
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


def units_of(text: str) -> list[str]:
    """The spoken units of a whole text, in order, each stripped: its complete units, then
    what is left after them (the end of the text ends its last unit)."""
    spans, rest = split_units(text)
    units = [text[start:end].strip() for start, end in spans]
    tail = text[rest:].strip()
    return units + [tail] if tail else units
