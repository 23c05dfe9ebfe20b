"""Splitting an answer into the sentences to speak: the same units as before, in time linear
in the text (a long answer once froze every persona of the process: the splitter rescanned
the text from its start for every period)."""
import random
import time

import pytest

from support import sentences_before
from ovos_a2a_solver.answers import sentences
from ovos_a2a_solver.answers.revisions import Revision

# pieces of text that exercise every rule: terminals, runs of them, closing and opening
# quotes, abbreviations, initials, numbers, line breaks, tabs
PIECES = ["a", "b", " ", " ", "  ", "A", "J", "Dr", "dr", "Mrs", "no", "e.g", "i.e", "3", "42", "4.5", ".", ".",
          "!", "?", "…", "...", "!!!", "\"", "'", ")", "]", "”", "»", "(", "“", "[", "\n", "\t", "x.y", ". ",
          "Dr. ", "3. ", "!!! ", "...\n", "J. ", "The end.", "“Go,” she said. "]


def random_texts(seed: int, count: int, longest: int = 30):
    rng = random.Random(seed)
    for _ in range(count):
        yield "".join(rng.choice(PIECES) for _ in range(rng.randint(0, longest))), rng


def spoken(module, chunks: list[str]) -> list[str]:
    speaker, out = module.SentenceSpeaker(), []
    for n, chunk in enumerate(chunks):
        out += speaker.add(Revision("a", chunk, n > 0))
    return out + speaker.finish()


def test_a_whole_text_splits_into_the_same_units_as_before():
    for text, _ in random_texts(seed=1, count=4000):
        assert sentences.split_units(text) == sentences_before.split_units(text), repr(text)


def test_a_streamed_text_is_spoken_in_the_same_units_as_before():
    # except a line that starts with a period: the splitter before read the word in front of
    # it differently depending on where the chunks fell
    checked = 0
    for text, rng in random_texts(seed=2, count=4000):
        if any(text[i] == "\n" and text[i + 1:i + 2] in tuple(".!?…") for i in range(len(text))):
            continue
        cuts = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, rng.randint(0, 6))))
        chunks = [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)])]
        assert spoken(sentences, chunks) == spoken(sentences_before, chunks), chunks
        checked += 1
    assert checked > 2000


SHORT_SENTENCES = ("The cat sat on the mat.", "Dr. Ada came at 3.", "Is it 4.5 now?", "Yes!", "J. R. wrote it.",
                   "We met Mrs. Smith, e.g. at noon.", "It works…", "“Go,” she said.")


def short_sentences(size: int) -> str:
    text, n = [], 0
    while sum(map(len, text)) < size:
        text.append(SHORT_SENTENCES[n % len(SHORT_SENTENCES)] + " ")
        n += 1
    return "".join(text)[:size]


def least_thread_cpu_seconds(work, text: str, runs: int = 5) -> float:
    """The least CPU time of this thread over ``runs`` (other processes do not count)."""
    best = float("inf")
    for _ in range(runs):
        start = time.thread_time()
        work(text)
        best = min(best, time.thread_time() - start)
    return best


def cpu_ratio(work, large: str, small: str, runs: int = 7) -> float:
    """How many times the CPU time of ``work(small)`` ``work(large)`` takes: the least of each over
    ``runs``, taken in turns, so that a busy moment of the machine slows both sizes alike."""
    best_large = best_small = float("inf")
    for _ in range(runs):
        best_large = min(best_large, least_thread_cpu_seconds(work, large, runs=1))
        best_small = min(best_small, least_thread_cpu_seconds(work, small, runs=1))
    return best_large / best_small


def split_whole(text: str) -> None:
    assert list(sentences.speak([Revision("a", text, False, True)]))


def split_streamed(text: str) -> None:
    assert spoken(sentences, [text[i:i + 64] for i in range(0, len(text), 64)])


#: 4x the work takes 4x the time when it grows linearly, 16x with the square: 8, their geometric
#: mean, is as far from either as a ratio can be (a busy machine has been seen to stretch 4 to 6.7; with three
#: other processes using the two cores, 3.9 to 4.5: the time is the thread's own CPU time, the least of seven runs)
LINEAR_NOT_SQUARE = 8


def test_four_times_the_text_costs_time_linear_in_it_not_its_square():
    # before, 4x the text took 18x the time: the cost grew with the square of the text
    small, large = short_sentences(25_000), short_sentences(100_000)
    for work in (split_whole, split_streamed):
        ratio = cpu_ratio(work, large, small)
        assert ratio < LINEAR_NOT_SQUARE, f"{work.__name__}: 4x the text took {ratio:.1f}x the time"


def test_a_long_run_of_exclamation_marks_costs_time_linear_in_its_length():
    # 40,000 "!" took 40 s before (each one started the same failed match again): 100,000 would take 4 min
    for make in (lambda n: "!" * n + "x", lambda n: "a " + "!" * n):
        ratio = cpu_ratio(split_whole, make(100_000), make(25_000))
        assert ratio < LINEAR_NOT_SQUARE, f"4x the run took {ratio:.1f}x the time"


def test_text_whose_end_is_unsure_is_said_when_the_grace_passes_and_not_before():
    for text in ("It costs 3.", "Is it 3?", "Tolkien, J.", "Yes.", "Hmm..."):
        speaker = sentences.SentenceSpeaker()
        assert speaker.add(Revision("a", text, False)) == [], text  # it may go on ("3.5")
        assert speaker.unsure(), text
        assert speaker.settle() == [text]
        assert not speaker.unsure() and speaker.finish() == []


def test_text_that_surely_goes_on_waits_for_more():
    for text in ("We met Dr.", "Ask Mrs. ", "Hello", "One, two, "):
        speaker = sentences.SentenceSpeaker()
        assert speaker.add(Revision("a", text, False)) == [], text
        assert not speaker.unsure(), text
        assert speaker.settle() == []


def test_more_text_before_the_grace_passes_makes_one_sentence():
    speaker = sentences.SentenceSpeaker()
    assert speaker.add(Revision("a", "Version 3.", False)) == [] and speaker.unsure()
    assert speaker.add(Revision("a", "5 is out. It", True)) == ["Version 3.5 is out."]
    assert not speaker.unsure()
