"""Tool-call repair: stable ids, wrapper unpacking, arguments that are not JSON."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolweave.messages import ToolCall
from toolweave.models._repair import (
    ToolCallBuilder,
    clean_tool_name,
    dump_arguments,
    parse_arguments,
)

ids = st.one_of(
    st.none(),
    st.just(""),
    st.sampled_from(["call_0", "call_1", "call_0_2"]),
    st.text(max_size=6),
)


@given(st.lists(ids, max_size=12), st.one_of(st.none(), st.text(max_size=8)))
def test_given_ids_are_kept_and_made_up_ones_are_fresh_and_stable(
    raw_ids: list[str | None], response_id: str | None
) -> None:
    """A given id is kept even when repeated (the loop keys calls by position and the
    converters repair the wire); a missing one is made up, never equal to an id
    seen before it, and the same stream always gets the same ids."""

    def build() -> list[str]:
        builder = ToolCallBuilder(response_id)
        return [builder.build(raw, "read", "{}")[0].id for raw in raw_ids]

    first = build()
    assert all(first)
    assert build() == first
    for position, (raw, made) in enumerate(zip(raw_ids, first, strict=True)):
        if raw:
            assert made == raw
        else:
            assert made not in first[:position]


@given(st.text(max_size=30))
def test_arguments_never_raise(text: str) -> None:
    tool_input, raw = parse_arguments(text)
    if raw is None:
        assert isinstance(tool_input, dict)
        if text.strip():
            assert json.loads(text) == tool_input
    else:
        assert tool_input == {}
        assert raw == text


def test_argument_shapes() -> None:
    assert parse_arguments(None) == ({}, None)
    assert parse_arguments("") == ({}, None)
    assert parse_arguments("  ") == ({}, None)
    assert parse_arguments('{"a": 1}') == ({"a": 1}, None)
    assert parse_arguments({"a": 1}) == ({"a": 1}, None)
    assert parse_arguments("[1, 2]") == ({}, "[1, 2]")  # valid JSON, not an object
    assert parse_arguments('{"a": ') == ({}, '{"a": ')


def test_a_wrapper_is_unpacked_into_the_calls_it_names() -> None:
    builder = ToolCallBuilder("r1")
    wrapper = {
        "tool_uses": [
            {"recipient_name": "functions.read", "parameters": {"path": "a"}},
            {"recipient_name": "grep", "parameters": "not an object"},
        ]
    }
    calls = builder.build("w1", "multi_tool_use.parallel", json.dumps(wrapper))
    assert calls == [
        ToolCall("w1_0", "read", {"path": "a"}),
        ToolCall("w1_1", "grep", {}, raw_arguments='"not an object"'),
    ]


def test_a_malformed_wrapper_stays_a_call_the_lifecycle_will_reject() -> None:
    builder = ToolCallBuilder()
    (call,) = builder.build(
        "w1", "multi_tool_use.parallel", '{"tool_uses": [{"oops": 1}]}'
    )
    assert call == ToolCall(
        "w1", "multi_tool_use.parallel", {"tool_uses": [{"oops": 1}]}
    )
    (broken,) = builder.build("w2", "multi_tool_use.parallel", "{not json")
    assert broken.raw_arguments == "{not json"


def test_dump_arguments_round_trips_and_keeps_raw_text() -> None:
    assert dump_arguments(ToolCall("c", "t", {"a": "é"})) == '{"a":"é"}'
    assert dump_arguments(ToolCall("c", "t", {}, raw_arguments="{bad")) == "{bad"


OFFERED = frozenset({"read", "grep", "read_file", "web.fetch"})


@pytest.mark.parametrize(
    ("sent", "read_as"),
    [
        ("read", "read"),  # offered: kept as it is
        (" read\n", "read"),
        ('"grep"', "grep"),
        ("`read_file`", "read_file"),
        ("functions.grep", "grep"),
        ("read<|im_end|>", "read"),
        ("<tool_call>grep</tool_call>", "grep"),
        ("web.fetch.", "web.fetch"),
        ("read:", "read"),
        # Never a guess: what does not clean to exactly one offered name stays.
        ("Read", "Read"),
        ("reader", "reader"),
        ("read grep", "read grep"),
        ("rm -rf", "rm -rf"),
        ("", ""),
        ("   ", "   "),
    ],
)
def test_tool_names_with_stray_characters(sent: str, read_as: str) -> None:
    assert clean_tool_name(sent, OFFERED) == read_as
    builder = ToolCallBuilder(tool_names=OFFERED)
    assert builder.build("c1", sent, "{}")[0].name == read_as


def test_without_an_offer_names_are_kept_verbatim() -> None:
    assert clean_tool_name(" read\n", frozenset()) == " read\n"


@given(st.text(max_size=12))
def test_cleaning_only_ever_yields_an_offered_name_or_the_original(name: str) -> None:
    cleaned = clean_tool_name(name, OFFERED)
    assert cleaned == name or cleaned in OFFERED


@pytest.mark.parametrize(
    "arguments",
    ['{"path": "a.py"}', '  {"path": "a.py"}\n', '\n\t{ "path" : "a.py" }  '],
)
def test_whitespace_around_arguments_is_no_fault(arguments: str) -> None:
    assert parse_arguments(arguments) == ({"path": "a.py"}, None)
