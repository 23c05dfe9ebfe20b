# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""How a setting is declared and read, written once for the package's three sets of
settings: the bridge's (``bridge.config``), the A2A plugin's (a persona's ``ovos-a2a-solver``
block, and the client's policies) and the RiveScript engine's. A shared leaf module (the
standard library only).

A setting is a field of a frozen dataclass made by :func:`setting`, which carries its
:class:`Spec`: the kind of value it takes, its bounds, what a blank text means, and what help
and tables say of it. A field made by :func:`group` holds a dataclass of settings of its own
(the client's ``RetryPolicy``...), whose settings are keys of the block beside the others.

:func:`read_settings` reads a config block by those specs: each value converted to its kind
and checked, or a ``ValueError`` naming the block, the key and what was given
(``ovos-a2a-solver: 'timeout' must be positive, got 0``); :func:`check_settings` holds a
dataclass of settings built in code to the same rules (a :class:`CheckedSettings` does so itself). A yes or no is read by
:func:`yes_or_no` everywhere. The bridge reads its settings from flags, the environment and a
file by the same specs, with its own rules for a value that does not fit (``bridge.config``).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any

#: the words of a yes or no, in a persona's config and in the bridge's settings (any case)
TRUE_WORDS = ("true", "yes", "on", "1")
FALSE_WORDS = ("false", "no", "off", "0")
#: what a blank text (empty, or spaces) given for a text setting means (``Spec.blank``)
BLANK_UNSET, BLANK_KEPT, BLANK_REFUSED = "unset", "kept", "refused"


@dataclass(frozen=True)
class Spec:
    """How one setting is described and read.

    ``kind`` is what its values are converted to: ``bool``, ``int``, ``float``, ``str``,
    ``tuple`` (of texts), a dataclass of settings (a :func:`group`), or a function of the given
    value that returns the setting's value, or raises ``ValueError`` saying what the value must
    be (``"must be an object with host or port"``). ``bounds`` is the inclusive (minimum,
    maximum) of a number; ``positive`` that it must be more than 0. ``blank`` is what a blank
    text means: not given (its default), a value as it is, or a mistake (``means`` then says
    what the value must be: ``"a path"``). ``secret`` marks a value others must not read (never
    shown in ``repr`` nor in an error): True, or a test of the value (a database URL is one only
    when it holds a password). ``prefix``: a group's keys are its settings' names after it.

    For the bridge's settings, from which its command line and docs are made: ``flag`` False
    makes it an environment-only setting; ``metavar`` names its value in the help; ``shown``
    is the default as the help says it when the plain value would not (``None`` meaning "the
    persona's", a computed default...). A secret setting of the bridge also has a
    ``--NAME-file`` flag and an ``OVOS_A2A_NAME_FILE`` variable, naming a file that holds it.

    For the plugin's settings table (``_settings.settings_table``): ``shown`` likewise, and
    ``described_with`` names the key in whose row this setting is described, a pair set
    together (``password`` with ``username``): its own ``help`` is then empty.
    """

    help: str = ""
    kind: Any = str
    bounds: tuple[float, float] | None = None
    positive: bool = False
    choices: tuple[str, ...] | None = None
    blank: str = BLANK_UNSET
    means: str | None = None
    secret: bool | Callable[[Any], bool] = False
    prefix: str = ""
    flag: bool = True
    metavar: str | None = None
    shown: str | None = None
    described_with: str | None = None


def setting(default: Any = MISSING, *, default_factory: Callable[[], Any] | Any = MISSING, **spec: Any) -> Any:
    """A dataclass field with its :class:`Spec` (keyword arguments) in its metadata. A
    ``secret`` is also kept out of ``repr`` (and so out of logs). No default: a required setting."""
    return field(default=default, default_factory=default_factory, repr=not spec.get("secret"),
                 metadata={"spec": Spec(**spec)})


def group(kind: type, prefix: str = "") -> Any:
    """A field that holds a dataclass of settings (its default: ``kind()``), whose settings are
    read from keys of the same block named ``prefix`` + their names."""
    return setting(default_factory=kind, kind=kind, prefix=prefix)


def spec_of(f: Field) -> Spec:
    """The :class:`Spec` of a field made by :func:`setting`."""
    return f.metadata["spec"]


def declared(cls: Any) -> list[Field]:
    """The fields of the dataclass ``cls`` (or of an instance) that are settings."""
    return [f for f in fields(cls) if "spec" in f.metadata]


def keyed_fields(cls: Any, prefix: str = "") -> list[tuple[str, Field]]:
    """The settings of the dataclass ``cls``, a group's included, each with the key of a block
    it is read from (``breaker_threshold``), in the order they are declared."""
    keyed = []
    for f in declared(cls):
        spec = spec_of(f)
        if dataclasses.is_dataclass(spec.kind):
            keyed += keyed_fields(spec.kind, prefix + spec.prefix)
        else:
            keyed.append((prefix + f.name, f))
    return keyed


def yes_or_no(value: Any) -> bool | None:
    """``value`` as a bool: a bool as it is, a string of :data:`TRUE_WORDS` or
    :data:`FALSE_WORDS` (any case, spaces around it) as its meaning; ``None`` for anything else.
    The one reading of a yes or no: each caller says what an answer of ``None`` means."""
    if isinstance(value, bool):
        return value
    word = value.strip().lower() if isinstance(value, str) else None
    if word in TRUE_WORDS or word in FALSE_WORDS:
        return word in TRUE_WORDS
    return None


def number_text(value: float) -> str:
    """A number as a person reads it: ``15``, ``0.1``."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def bounds_text(f: Field) -> str:
    """``1–300`` for a bounded number, else ``""``."""
    bounds = spec_of(f).bounds
    return f"{number_text(bounds[0])}–{number_text(bounds[1])}" if bounds else ""


def default_cell(f: Field, shown: str, plain: Collection[str] = ()) -> str:
    """The default column of a settings table: ``shown`` (the default as that table says it) in
    backticks, as a value is, unless it is words (it has a space) or one of ``plain`` (``none``);
    then a number's bounds (``2 (0–10)``)."""
    cell = shown if shown in plain or " " in shown else f"`{shown}`"
    return f"{cell} ({bounds_text(f)})" if bounds_text(f) else cell


def markdown_table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table (the docs' settings tables): the ``head`` row, its rule, a line per row."""
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


#: what a default of no value, or of none, reads as in a persona block's table
PLAIN_DEFAULTS = ("(required)", "none")


def quoted(text: str) -> str:
    """A default sentence as a settings table shows it: in quotes."""
    return f'"{text}"'


def json_default_text(f: Field) -> str:
    """The default of a persona block's key as its JSON value reads (``30``, ``false``, ``[]``), a
    sentence in quotes, ``none``, ``(required)``, or the spec's ``shown``."""
    spec = spec_of(f)
    if spec.shown is not None:
        return spec.shown
    if f.default is MISSING:
        return "(required)"
    if f.default is None:
        return "none"
    if spec.kind in (int, float):
        return number_text(f.default)
    import json  # only the docs' tables need it
    return quoted(f.default) if isinstance(f.default, str) and " " in f.default else json.dumps(f.default)


def persona_block_table(cls: Any) -> str:
    """The docs' table of the keys of a persona's block whose settings are the dataclass ``cls``
    (Markdown): a row per setting (a pair set together shares one), its default and bounds, and
    its ``help``."""
    rows: dict[str, tuple[list[str], str, str]] = {}
    for key, f in keyed_fields(cls):
        spec = spec_of(f)
        if spec.described_with:
            rows[spec.described_with][0].append(key)
            continue
        rows[key] = ([key], default_cell(f, json_default_text(f), plain=PLAIN_DEFAULTS), spec.help)
    return markdown_table(("key", "default", "meaning"),
                          ((", ".join(f"`{key}`" for key in keys), default, meaning)
                           for keys, default, meaning in rows.values()))


class _NotGiven:
    def __repr__(self) -> str:
        return "NOT_GIVEN"


#: what :func:`read_value` gives for a value that leaves the setting at its default
NOT_GIVEN: Any = _NotGiven()


class Unfit(ValueError):
    """A value a setting cannot take; ``str()`` says what it must be (``must be positive``)."""


def read_value(spec: Spec, value: Any) -> Any:
    """``value`` as a setting of ``spec`` takes it (converted to its kind), :data:`NOT_GIVEN`
    when it leaves the setting at its default (``None`` for a setting other than a number or a
    yes or no; a blank text, unless ``spec.blank`` says otherwise), or :class:`Unfit`."""
    kind = spec.kind
    if kind is bool:
        meaning = yes_or_no(value)
        if meaning is None:
            raise Unfit("must be true or false")
        return meaning
    if kind in (int, float):
        return _number(spec, value)
    if value is None:
        return NOT_GIVEN
    if kind is str:
        return _text(spec, value)
    if kind is tuple:
        if isinstance(value, str):
            return (value,) if value.strip() else NOT_GIVEN
        if not isinstance(value, (list, tuple)):
            raise Unfit("must be a list of texts")
        return tuple(str(item) for item in value)
    try:
        return kind(value)
    except Unfit:
        raise
    except ValueError as exc:
        raise Unfit(str(exc)) from None


def _text(spec: Spec, value: Any) -> Any:
    means = spec.means or "a string"
    if not isinstance(value, str):
        raise Unfit(f"must be {means}")
    if spec.choices and value not in spec.choices:
        raise Unfit(f"must be one of {', '.join(spec.choices)}")
    if value.strip() or spec.blank == BLANK_KEPT:
        return value
    if spec.blank == BLANK_REFUSED:
        raise Unfit(f"must be {means}")
    return NOT_GIVEN


def _number(spec: Spec, value: Any) -> int | float:
    kind = spec.kind
    wanted = "a whole number" if kind is int else "a number"
    if spec.bounds:
        wanted += f" from {number_text(spec.bounds[0])} to {number_text(spec.bounds[1])}"
    number = _as_number(value, kind)
    if number is None:
        raise Unfit(f"must be {wanted}")
    if spec.bounds and not spec.bounds[0] <= number <= spec.bounds[1]:
        raise Unfit(f"must be {wanted}")
    if spec.positive and not number > 0:
        raise Unfit("must be positive")
    return number


def _as_number(value: Any, kind: type) -> int | float | None:
    """``value`` (a number, or a text of one; not a bool) as an ``int`` (when it is whole)
    or a ``float``; ``None`` when it is none."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    if kind is int and isinstance(value, int):
        return value
    try:
        whole = kind is int and isinstance(value, str) and value.strip().lstrip("+-").isdigit()
        number = int(value) if whole else float(value)
    except (ValueError, OverflowError):
        return None
    if kind is float:
        return number
    if isinstance(number, float):
        return int(number) if number.is_integer() else None
    return number


def _problem(owner: str, key: str, spec: Spec, value: Any, unfit: Unfit) -> ValueError:
    """The error of a value ``key`` cannot take: the block, the key, what it must be, and what
    was given (a secret's type only)."""
    given = f"a value of type {type(value).__name__}" if spec.secret else repr(value)
    return ValueError(f"{owner}: {key!r} {unfit}, got {given}")


def read_settings(cls: type, block: Mapping[str, Any] | None, owner: str, prefix: str = "") -> dict[str, Any]:
    """The values the config ``block`` gives for the settings of the dataclass ``cls``, by
    field name, each read by its spec (:func:`read_value`); a group's from its keys, as one
    value of its class (which may refuse what its settings cannot be together). Keys ``cls`` does not declare are ignored; a value that leaves a
    setting at its default is left out (a required setting is read even when missing, so that
    its own error says what it must be). ``ValueError`` naming ``owner`` and the key of a value
    that does not fit."""
    block = block or {}
    values: dict[str, Any] = {}
    for f in declared(cls):
        spec, key = spec_of(f), prefix + f.name
        if dataclasses.is_dataclass(spec.kind):
            given = read_settings(spec.kind, block, owner, prefix + spec.prefix)
            try:
                values[f.name] = spec.kind(**given)
            except ValueError as exc:  # what its settings cannot be together
                raise ValueError(f"{owner}: {exc}") from None
            continue
        required = f.default is MISSING and f.default_factory is MISSING
        if key not in block and not required:
            continue
        try:
            value = read_value(spec, block.get(key))
        except Unfit as unfit:
            raise _problem(owner, key, spec, block.get(key), unfit) from None
        if value is NOT_GIVEN and required:
            raise _problem(owner, key, spec, block.get(key), Unfit(f"must be {spec.means or 'given'}"))
        if value is not NOT_GIVEN:
            values[f.name] = value
    return values


def check_settings(settings: Any) -> None:
    """Hold the dataclass of settings ``settings``, built in code, to its specs (call it from
    ``__post_init__``): each value other than its declared default converted to its kind, or
    set to its default when it leaves the setting at it; ``ValueError`` naming the class and the setting of a value that does not
    fit (``RetryPolicy: 'max_retries' must be a whole number from 0 to 10, got 11``)."""
    owner = type(settings).__name__
    for f in declared(settings):
        spec, value = spec_of(f), getattr(settings, f.name)
        if f.default is not MISSING and value is f.default:
            continue  # as declared
        if dataclasses.is_dataclass(spec.kind):
            if not isinstance(value, spec.kind):
                raise ValueError(f"{owner}: {f.name!r} must be a {spec.kind.__name__}, "
                                 f"got {type(value).__name__}")
            continue
        try:
            read = read_value(spec, value)
        except Unfit as unfit:
            raise _problem(owner, f.name, spec, value, unfit) from None
        if read is NOT_GIVEN:
            if f.default is MISSING and f.default_factory is MISSING:
                raise _problem(owner, f.name, spec, value, Unfit(f"must be {spec.means or 'given'}"))
            read = f.default if f.default_factory is MISSING else f.default_factory()
        object.__setattr__(settings, f.name, read)


class CheckedSettings:
    """A dataclass of settings that holds itself to its specs when it is built
    (:func:`check_settings`); a subclass that checks more calls ``super().__post_init__()``."""

    def __post_init__(self) -> None:
        check_settings(self)
