"""The answer's revisions -> whole sentences to speak, each as soon as it is complete.

Where a spoken unit (a sentence or a line) ends is :mod:`ovos_a2a_solver.sentence_units`.
Text at the very end of what arrived so far waits for more text, for the agent to say the
piece is complete, for another piece to start, or for the end of the answer; text whose end
is unsure, a period after a number ("It costs 3.", which may go on as "3.5"), an initial
("J.") or a short word ("Yes."), is said once no more text came within ``SENTENCE_GRACE``
seconds (:meth:`SentenceSpeaker.unsure`, :meth:`SentenceSpeaker.settle`): a sentence is
heard when it ends, not when the next one starts.

Each piece of the answer (artifact) is its own run of units. When the agent rewrites a
piece (``append: false``) differently from what was already spoken, it is spoken again
from the first unit that changed: only whole units, never the tail of a word. A rewrite
that changes only spaces, or only shortens the text, says nothing. A streamed piece is
looked at again only from where the last look could not decide.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

from ovos_a2a_solver.answers.revisions import Revision
from ovos_a2a_solver.sentence_units import MAY_END_UNIT, PUNCTUATED_END, resume_point, split_units, unsure_end

#: Seconds that text whose end is unsure ("It costs 3.") waits for more before it is said.
SENTENCE_GRACE = 0.3


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
        return any(piece.rest and unsure_end(piece.tail) for piece in self._pieces.values())

    def settle(self) -> list[str]:
        """The unsure ends (see :meth:`unsure`), said now: no more text came for them."""
        out: list[str] = []
        for piece in self._pieces.values():
            if piece.rest and unsure_end(piece.tail):
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
        ended = bool(PUNCTUATED_END.search(piece.tail.rstrip()))
        piece.tail = (piece.tail + chunk)[-16:]
        if not (MAY_END_UNIT.search(chunk) or (ended and any(c.isspace() for c in chunk))):
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
