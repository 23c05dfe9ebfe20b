"""W3C Trace Context as the package reads it (``trace_context``), against generated headers:
whatever a caller sends, what goes on is a valid ``traceparent`` of version 00 or nothing, and a
valid ``tracestate`` list of at most 32 members and 512 characters, or nothing."""
from __future__ import annotations

import re
import string

from hypothesis import given, strategies as st

from ovos_a2a_solver.trace_context import MOST_STATE, read_traceparent, read_tracestate, trace_headers

HEX = "0123456789abcdef"
VERSION_00 = re.compile(r"00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}")
KEY = st.from_regex(r"[a-z0-9][_0-9a-z\-*/]{0,20}", fullmatch=True)
VALUE = st.from_regex(r"[\x21-\x2b\x2d-\x3c\x3e-\x7e]{1,40}", fullmatch=True)


@given(st.text(alphabet=string.printable + "\x00\u2028é", max_size=120))
def test_whatever_comes_in_a_valid_traceparent_or_none_goes_on(text):
    parent = read_traceparent(text)
    assert parent is None or VERSION_00.fullmatch(parent), parent


@given(st.text(alphabet=HEX, min_size=2, max_size=2).filter(lambda v: v not in ("00", "ff")),
       st.text(alphabet=HEX, min_size=32, max_size=32).filter(lambda t: t != "0" * 32),
       st.text(alphabet=HEX, min_size=16, max_size=16).filter(lambda p: p != "0" * 16),
       st.text(alphabet=HEX, min_size=2, max_size=2), st.text(alphabet=string.ascii_letters + "-", max_size=20))
def test_a_later_version_is_read_by_its_first_fields(version, trace, parent, flags, later):
    header = f"{version}-{trace}-{parent}-{flags}" + (f"-{later}" if later else "")
    assert read_traceparent(header) == f"00-{trace}-{parent}-{flags}"
    assert read_traceparent(f"00-{trace}-{parent}-{flags}x") is None


@given(st.text(max_size=1200))
def test_whatever_tracestate_comes_in_what_goes_on_is_a_short_valid_list(text):
    state = read_tracestate(text)
    assert len(state) <= MOST_STATE
    assert state.isascii() and state.isprintable(), state
    assert read_tracestate(state) == state  # valid as it goes on
    assert len(state.split(",")) <= 32


@given(st.dictionaries(KEY, VALUE, min_size=1, max_size=8))
def test_a_valid_short_list_goes_on_as_it_came(members):
    text = ", ".join(f"{key}={value}" for key, value in members.items())
    assert read_tracestate(text) == ",".join(f"{key}={value}" for key, value in members.items())


def test_the_shapes_seen_from_callers():
    parent = "00-" + "a" * 32 + "-" + "b" * 16 + "-01"
    assert trace_headers({"traceparent": parent, "tracestate": "x" * 512}) == {"traceparent": parent}
    assert trace_headers({"traceparent": parent, "tracestate": "v=1\n2026-12-02 INFO forged"}) == {"traceparent": parent}
    assert trace_headers({"traceparent": parent, "tracestate": ",".join(f"k{n}=v" for n in range(33))}) == \
        {"traceparent": parent}
    long = ",".join([f"big={'v' * 200}"] + [f"k{n}=" + "v" * 40 for n in range(12)])
    kept = trace_headers({"traceparent": parent, "tracestate": long})["tracestate"]
    assert "big=" not in kept and len(kept) <= MOST_STATE and kept.startswith("k0=")
    assert trace_headers({"traceparent": "ff-" + "a" * 32 + "-" + "b" * 16 + "-01"}) == {}
    assert trace_headers({"traceparent": parent.upper()}) == {}
