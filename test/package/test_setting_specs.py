"""How a setting is declared and read (setting_specs): each kind converted and checked, the
error naming the block, the key and what was given, a blank text by the spec's rule, a group's
keys beside the others, and a dataclass of settings built in code held to the same rules."""
from dataclasses import dataclass

import pytest

from ovos_a2a_solver.setting_specs import (BLANK_KEPT, BLANK_REFUSED, CheckedSettings, check_settings, group,
                                           read_settings, setting, yes_or_no)


def bus_address(value):
    if not isinstance(value, dict):
        raise ValueError("must be an object with host or port")
    return tuple(sorted(value.items()))


@dataclass(frozen=True)
class Backoff(CheckedSettings):
    tries: int = setting(2, kind=int, bounds=(0, 10))
    delay: float = setting(0.5, kind=float, positive=True)


@dataclass(frozen=True)
class Example:
    url: str = setting(means="the agent's URL")
    timeout: float = setting(30.0, kind=float, positive=True)
    count: int = setting(100, kind=int, positive=True)
    streaming: bool = setting(False, kind=bool)
    origins: tuple = setting((), kind=tuple)
    line: str = setting("The default line.")
    token: str | None = setting(None, secret=True, blank=BLANK_KEPT)
    brain: str | None = setting(None, blank=BLANK_REFUSED, means="a path")
    mode: str = setting("fast", choices=("fast", "slow"))
    bus: tuple = setting((), kind=bus_address)
    backoff: Backoff = group(Backoff, prefix="backoff_")


def read(**block):
    return Example(**read_settings(Example, {"url": "http://x", **block}, "example"))


@pytest.mark.parametrize("key, given, says", [
    ("timeout", 0, "must be positive, got 0"),
    ("timeout", "soon", "must be a number, got 'soon'"),
    ("timeout", None, "must be a number, got None"),
    ("timeout", True, "must be a number, got True"),
    ("count", 2.5, "must be a whole number, got 2.5"),
    ("count", "2.5", "must be a whole number, got '2.5'"),
    ("count", 1.5j, "must be a whole number, got 1.5j"),
    ("streaming", "maybe", "must be true or false, got 'maybe'"),
    ("streaming", None, "must be true or false, got None"),
    ("origins", 5, "must be a list of texts, got 5"),
    ("line", 3, "must be a string, got 3"),
    ("token", 123, "must be a string, got a value of type int"),
    ("brain", " ", "must be a path, got ' '"),
    ("mode", "medium", "must be one of fast, slow, got 'medium'"),
    ("bus", [1], "must be an object with host or port, got [1]"),
    ("backoff_tries", 11, "must be a whole number from 0 to 10, got 11"),
    ("backoff_tries", -1, "must be a whole number from 0 to 10, got -1"),
    ("backoff_delay", "0", "must be positive, got '0'"),
])
def test_a_value_that_does_not_fit_is_an_error_naming_the_block_the_key_and_what_was_given(key, given, says):
    with pytest.raises(ValueError) as error:
        read(**{key: given})
    assert str(error.value) == f"example: {key!r} {says}"


def test_a_required_setting_says_what_it_must_be_when_missing():
    with pytest.raises(ValueError) as error:
        read_settings(Example, {}, "example")
    assert str(error.value) == "example: 'url' must be the agent's URL, got None"


def test_each_kind_is_converted():
    settings = read(timeout="2.5", count="7", streaming="Yes", origins="https://a", token="", mode="slow",
                    bus={"port": 1, "host": "h"}, backoff_tries="3", backoff_delay=1, ignored="anything")
    assert (settings.timeout, settings.count, settings.streaming, settings.origins) == (2.5, 7, True, ("https://a",))
    assert (settings.token, settings.mode, settings.bus) == ("", "slow", (("host", "h"), ("port", 1)))
    assert settings.backoff == Backoff(tries=3, delay=1.0)
    assert read(count=4.0, origins=["a", 2]).count == 4 and read(origins=["a", 2]).origins == ("a", "2")


def test_a_blank_text_or_null_leaves_a_setting_at_its_default():
    settings = read(line="  ", origins="", bus=None, token=None)
    assert (settings.line, settings.origins, settings.bus, settings.token) == ("The default line.", (), (), None)


def test_a_secret_never_shows_in_an_error_or_a_repr():
    with pytest.raises(ValueError) as error:
        read(token=["very-secret"])
    assert "very-secret" not in str(error.value)
    assert "very-secret" not in repr(read(token="very-secret"))


def test_a_group_built_in_code_is_held_to_its_specs_and_named_by_its_class():
    assert Backoff(tries="4", delay="0.25") == Backoff(tries=4, delay=0.25)
    with pytest.raises(ValueError) as error:
        Backoff(tries=20)
    assert str(error.value) == "Backoff: 'tries' must be a whole number from 0 to 10, got 20"
    with pytest.raises(ValueError, match="'backoff' must be a Backoff, got dict"):
        check_settings(Example(url="http://x", backoff={"tries": 1}))


@pytest.mark.parametrize("given, meaning", [(True, True), ("on", True), (" YES ", True), ("1", True),
                                            (False, False), ("off", False), ("No", False), ("0", False),
                                            ("maybe", None), (1, None), (None, None)])
def test_one_reading_of_a_yes_or_no(given, meaning):
    assert yes_or_no(given) is meaning
