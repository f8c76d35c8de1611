"""unique_call_ids: repeated tool-call ids made unique on the way to a provider."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolweave.messages import Message, Text, ToolCall, ToolResult
from toolweave.models import ANTHROPIC_IDS, CHAT_IDS, IdSpelling, unique_call_ids


def turn(*ids: str) -> list[Message]:
    """An assistant message calling `ids`, and the user message answering each."""
    calls = tuple(ToolCall(i, "t", {"n": n}) for n, i in enumerate(ids))
    results = tuple(ToolResult(i, f"result {n}") for n, i in enumerate(ids))
    return [Message("assistant", (Text("ok"), *calls)), Message("user", results)]


def wire_ids(messages: list[Message]) -> tuple[list[str], list[str]]:
    out = unique_call_ids(messages)
    calls = [c.id for m in out for c in m.tool_calls]
    results = [r.call_id for m in out for r in m.tool_results]
    return calls, results


TABLE = [
    pytest.param([["a", "b"]], ["a", "b"], id="nothing repeated"),
    pytest.param([["a", "a"]], ["a", "a_2"], id="twice in one response"),
    pytest.param([["a", "a", "a"]], ["a", "a_2", "a_3"], id="three times"),
    pytest.param([["call_0"], ["call_0"]], ["call_0", "call_0_2"], id="every turn"),
    pytest.param(
        [["a", "a_2"], ["a"]], ["a", "a_2", "a_3"], id="a suffix the model used itself"
    ),
    pytest.param([["a", "a"], ["a_2"]], ["a", "a_2", "a_2_2"], id="a later a_2 moves"),
    pytest.param([["", ""]], ["call_1", "call_2"], id="empty ids"),
]


@pytest.mark.parametrize(("turns", "expected"), TABLE)
def test_repeats_get_the_first_free_suffix(
    turns: list[list[str]], expected: list[str]
) -> None:
    messages = [Message("user", "go")] + [m for ids in turns for m in turn(*ids)]
    calls, results = wire_ids(messages)
    assert calls == expected
    assert results == expected  # each result takes its own call's wire id


def test_nothing_repeated_is_not_copied() -> None:
    messages = [Message("user", "go"), *turn("a", "b"), Message("user", "thanks")]
    assert unique_call_ids(messages) is messages


def test_results_pair_by_order_and_strays_are_left_alone() -> None:
    calls = (ToolCall("a", "t", {}), ToolCall("a", "t", {}))
    messages = [
        Message("user", "go"),
        Message("assistant", calls),
        Message(
            "user", (ToolResult("a", "1"), ToolResult("a", "2"), ToolResult("z", "?"))
        ),
        Message("user", "plain"),
        Message("assistant", (ToolCall("a", "t", {}),)),
        Message("user", (Text("no results here"),)),
    ]
    out = unique_call_ids(messages)
    assert [r.call_id for r in out[2].tool_results] == ["a", "a_2", "z"]
    assert [r.text for r in out[2].tool_results] == ["1", "2", "?"]
    assert out[3] == messages[3] and out[5] == messages[5]
    assert [c.id for c in out[4].tool_calls] == ["a_3"]


ids = st.one_of(st.just(""), st.sampled_from(["a", "a_2", "call_0", "call_0_2"]))


@given(st.lists(st.lists(ids, min_size=1, max_size=4), max_size=5))
def test_wire_ids_are_unique_paired_and_append_stable(turns: list[list[str]]) -> None:
    messages = [Message("user", "go")] + [m for t in turns for m in turn(*t)]
    calls, results = wire_ids(messages)
    assert len(set(calls)) == len(calls)
    assert all(calls)
    assert results == calls
    # Appending never changes the wire ids of what was already there.
    for cut in range(1, len(messages) + 1):
        prefix_calls, _ = wire_ids(messages[:cut])
        assert calls[: len(prefix_calls)] == prefix_calls


SPELLING_TABLE = [
    # (spelling, turns of ids, expected wire ids)
    pytest.param(
        "anthropic",
        [["functions.read:0", "functions.read:1"]],
        ["functions_read_0", "functions_read_1"],
        id="kimi-style ids",
    ),
    pytest.param(
        "anthropic", [["a.b", "a_b"]], ["a_b", "a_b_2"], id="respelled meets a real id"
    ),
    pytest.param(
        "anthropic",
        [["call 0", "call 0"], ["call/0"]],
        ["call_0", "call_0_2", "call_0_3"],
        id="repeats of a respelled id",
    ),
    pytest.param("anthropic", [["é", ""]], ["_", "call_1"], id="non-ascii and empty"),
    pytest.param(
        "chat",
        [["fc_" + "x" * 50, "fc_" + "x" * 50]],
        ["fc_" + "x" * 37, "fc_" + "x" * 35 + "_2"],
        id="responses ids too long",
    ),
    pytest.param(
        "chat",
        [["y" * 38 + "_2"], ["y" * 41]],
        ["y" * 38 + "_2", "y" * 40],
        id="truncated, no clash",
    ),
    pytest.param(
        "chat",
        [["z" * 45], ["z" * 40]],
        ["z" * 40, "z" * 38 + "_2"],
        id="truncated meets the real one",
    ),
    pytest.param("chat", [["a.b:0"]], ["a.b:0"], id="chat keeps any characters"),
]


@pytest.mark.parametrize(("provider", "turns", "expected"), SPELLING_TABLE)
def test_ids_are_spelled_as_the_provider_accepts(
    provider: str, turns: list[list[str]], expected: list[str]
) -> None:
    spelling = {"anthropic": ANTHROPIC_IDS, "chat": CHAT_IDS}[provider]
    messages = [Message("user", "go")] + [m for ids in turns for m in turn(*ids)]
    out = unique_call_ids(messages, spelling)
    calls = [c.id for m in out for c in m.tool_calls]
    assert calls == expected
    assert [r.call_id for m in out for r in m.tool_results] == expected
    assert len(set(calls)) == len(calls)
    for call_id in calls:
        assert spelling.spell(call_id) == call_id  # valid for the provider
    # the transcript keeps the model's ids
    assert [c.id for m in messages for c in m.tool_calls] == [
        i for ids in turns for i in ids
    ]


@given(
    st.lists(
        st.lists(st.text(max_size=60), min_size=1, max_size=4), min_size=1, max_size=4
    ),
    st.sampled_from(["anthropic", "chat"]),
)
def test_property_any_ids_reach_any_provider_valid_and_paired(
    turns: list[list[str]], provider: str
) -> None:
    spelling = {"anthropic": ANTHROPIC_IDS, "chat": CHAT_IDS}[provider]
    messages = [Message("user", "go")] + [m for ids in turns for m in turn(*ids)]
    out = unique_call_ids(messages, spelling)
    calls = [c.id for m in out for c in m.tool_calls]
    assert len(set(calls)) == len(calls) and all(calls)
    assert all(spelling.spell(c) == c for c in calls)
    assert [r.call_id for m in out for r in m.tool_results] == calls
    longer = messages + turn("next")  # append-stable: earlier wire ids never move
    again = [c.id for m in unique_call_ids(longer, spelling) for c in m.tool_calls]
    assert again[: len(calls)] == calls


def _naive(messages: list[Message], spelling: IdSpelling) -> list[str]:
    """The rule as stated: each call's id as spelled if free, else the first free
    ``<id>_<n>`` counting from 2 (from 1 for an empty id)."""
    used: set[str] = set()
    out: list[str] = []
    for call in (c for m in messages for c in m.tool_calls):
        spelled = spelling.spell(call.id)
        if spelled and spelled not in used:
            wire = spelled
        else:
            base, n = spelled or "call", 2 if spelled else 1
            while True:
                suffix = f"_{n}"
                cut = base
                if spelling.max_len is not None:
                    cut = base[: max(0, spelling.max_len - len(suffix))]
                wire = cut + suffix
                if wire not in used:
                    break
                n += 1
        used.add(wire)
        out.append(wire)
    return out


_ID_ALPHABET = st.sampled_from(["call", "call_2", "call_1", "", "a.b", "a_b", "x" * 45])


@given(
    st.lists(st.lists(_ID_ALPHABET, min_size=1, max_size=5), min_size=1, max_size=6),
    st.sampled_from(["any", "anthropic", "chat"]),
)
def test_property_the_repair_is_the_first_free_suffix_rule(
    turns: list[list[str]], provider: str
) -> None:
    """The fast repair (which resumes each suffix search) equals the rule as stated."""
    spelling = {"any": IdSpelling(), "anthropic": ANTHROPIC_IDS, "chat": CHAT_IDS}[
        provider
    ]
    messages = [Message("user", "go")] + [m for ids in turns for m in turn(*ids)]
    out = unique_call_ids(messages, spelling)
    assert [c.id for m in out for c in m.tool_calls] == _naive(messages, spelling)


def test_call_0_in_every_one_of_thousands_of_turns() -> None:
    """Each repeat is answered at once (no re-walk of earlier suffixes)."""
    messages = [Message("user", "go")] + [
        m for _ in range(3_000) for m in turn("call_0")
    ]
    calls = [c.id for m in unique_call_ids(messages) for c in m.tool_calls]
    assert calls == ["call_0"] + [f"call_0_{n}" for n in range(2, 3_001)]
