from __future__ import annotations

import dataclasses
import json
from typing import Any, cast

import pytest
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseToolSearchCall,
    ResponseToolSearchOutputItem,
)
from openai.types.responses.response_function_tool_call import CallerProgram
from openai.types.responses.response_reasoning_item import ResponseReasoningItem

from agents import Agent
from agents.exceptions import AgentsException
from agents.items import (
    ReasoningItem,
    ToolCallItem,
    ToolSearchCallItem,
    ToolSearchOutputItem,
    TResponseInputItem,
    coerce_tool_search_output_raw_item,
)
from agents.models.fake_id import FAKE_RESPONSES_ID
from agents.result import RunResult
from agents.run_context import RunContextWrapper
from agents.run_internal import items as run_items


@pytest.mark.parametrize("mapping_call", [False, True], ids=["typed-call", "mapping-call"])
def test_programmatic_structured_tool_errors_are_encoded_as_json_objects(
    mapping_call: bool,
) -> None:
    caller = {"type": "program", "caller_id": "program-42"}
    tool_call: Any
    if mapping_call:
        tool_call = {"type": "function_call", "call_id": "call-42", "caller": caller}
    else:
        tool_call = ResponseFunctionToolCall(
            type="function_call",
            call_id="call-42",
            name="lookup",
            arguments="{}",
            caller=CallerProgram(type="program", caller_id="program-42"),
        )

    output = run_items.function_tool_error_output(
        tool_call,
        'Rejected: "東京"',
        output_json_schema={"type": "object"},
    )

    assert json.loads(output) == {"error": 'Rejected: "東京"'}


@pytest.mark.parametrize("caller", [None, {"type": "direct"}], ids=["no-caller", "direct"])
@pytest.mark.parametrize("has_schema", [False, True], ids=["untyped", "typed"])
def test_direct_function_tool_errors_preserve_plain_text(
    caller: dict[str, str] | None,
    has_schema: bool,
) -> None:
    tool_call: dict[str, Any] = {"type": "function_call", "call_id": "call-42"}
    if caller is not None:
        tool_call["caller"] = caller

    output = run_items.function_tool_error_output(
        tool_call,
        "Request rejected.",
        output_json_schema={"type": "object"} if has_schema else None,
    )

    assert output == "Request rejected."


def test_drop_orphan_function_calls_preserves_non_mapping_entries() -> None:
    payload: list[Any] = [
        cast(TResponseInputItem, "plain-text-input"),
        cast(TResponseInputItem, {"type": "message", "role": "user", "content": "hello"}),
        cast(
            TResponseInputItem,
            {
                "type": "function_call",
                "call_id": "orphan_call",
                "name": "orphan",
                "arguments": "{}",
            },
        ),
        cast(
            TResponseInputItem,
            {
                "type": "function_call",
                "call_id": "paired_call",
                "name": "paired",
                "arguments": "{}",
            },
        ),
        cast(
            TResponseInputItem,
            {"type": "function_call_output", "call_id": "paired_call", "output": "ok"},
        ),
        cast(TResponseInputItem, {"call_id": "not-a-tool-call"}),
    ]

    filtered = run_items.drop_orphan_function_calls(cast(list[TResponseInputItem], payload))
    filtered_values = cast(list[Any], filtered)
    assert "plain-text-input" in filtered_values
    assert cast(dict[str, Any], filtered[1])["type"] == "message"
    assert any(
        isinstance(entry, dict)
        and entry.get("type") == "function_call"
        and entry.get("call_id") == "paired_call"
        for entry in filtered
    )
    assert not any(
        isinstance(entry, dict)
        and entry.get("type") == "function_call"
        and entry.get("call_id") == "orphan_call"
        for entry in filtered
    )


def test_replay_pruning_drops_orphan_program_call_chain() -> None:
    generated_items = cast(
        list[TResponseInputItem],
        [
            {
                "type": "program",
                "call_id": "program_orphan",
                "code": "return await tools.lookup({});",
                "fingerprint": "fingerprint:orphan",
            },
            {
                "type": "function_call",
                "call_id": "function_orphan",
                "name": "lookup",
                "arguments": "{}",
                "caller": {"type": "program", "caller_id": "program_orphan"},
            },
        ],
    )

    prepared = run_items.prepare_model_input_items([], generated_items)
    resumed = run_items.normalize_resumed_input(generated_items)

    assert prepared == []
    assert resumed == []


def test_drop_orphan_function_calls_preserves_active_program_call_chain() -> None:
    payload = cast(
        list[TResponseInputItem],
        [
            {
                "type": "program",
                "call_id": "program_active",
                "code": "return await tools.lookup({});",
                "fingerprint": "fingerprint:active",
            },
            {
                "type": "function_call",
                "call_id": "function_completed",
                "name": "lookup",
                "arguments": "{}",
                "caller": {"type": "program", "caller_id": "program_active"},
            },
            {
                "type": "function_call_output",
                "call_id": "function_completed",
                "output": "done",
                "caller": {"type": "program", "caller_id": "program_active"},
            },
        ],
    )

    filtered = run_items.drop_orphan_function_calls(payload)

    assert filtered == payload


@pytest.mark.parametrize(
    "hosted_item_type",
    [
        "file_search_call",
        "web_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_list_tools",
        "mcp_call",
        "mcp_approval_request",
        "mcp_approval_response",
    ],
)
def test_replay_pruning_preserves_program_owned_hosted_items(hosted_item_type: str) -> None:
    payload = cast(
        list[TResponseInputItem],
        [
            {
                "type": "program",
                "call_id": "program_pending",
                "code": "return await tools.lookup({});",
                "fingerprint": "fingerprint:pending",
            },
            {
                "type": hosted_item_type,
                "id": "hosted_item",
                "caller": {"type": "program", "caller_id": "program_pending"},
            },
        ],
    )

    assert run_items.drop_orphan_function_calls(payload) == payload
    assert run_items.prepare_model_input_items([], payload) == payload
    assert run_items.normalize_resumed_input(payload) == payload


def test_drop_orphan_function_calls_drops_reasoning_preceding_dropped_tool_call() -> None:
    # Regression: reasoning items tied to a now-dropped orphan tool call would otherwise be
    # forwarded to the API and trigger
    # ``Item 'rs_...' of type 'reasoning' was provided without its required following item``.
    payload: list[Any] = [
        cast(TResponseInputItem, {"role": "user", "content": "hi"}),
        cast(TResponseInputItem, {"type": "reasoning", "id": "rs_orphan_a", "summary": []}),
        cast(TResponseInputItem, {"type": "reasoning", "id": "rs_orphan_b", "summary": []}),
        cast(
            TResponseInputItem,
            {
                "type": "function_call",
                "call_id": "orphan_call",
                "name": "orphan",
                "arguments": "{}",
            },
        ),
        cast(TResponseInputItem, {"type": "reasoning", "id": "rs_paired", "summary": []}),
        cast(
            TResponseInputItem,
            {
                "type": "function_call",
                "call_id": "paired_call",
                "name": "paired",
                "arguments": "{}",
            },
        ),
        cast(
            TResponseInputItem,
            {"type": "function_call_output", "call_id": "paired_call", "output": "ok"},
        ),
    ]

    filtered = run_items.drop_orphan_function_calls(cast(list[TResponseInputItem], payload))

    reasoning_ids = [
        entry.get("id")
        for entry in filtered
        if isinstance(entry, dict) and entry.get("type") == "reasoning"
    ]
    assert reasoning_ids == ["rs_paired"]
    assert not any(
        isinstance(entry, dict)
        and entry.get("type") == "function_call"
        and entry.get("call_id") == "orphan_call"
        for entry in filtered
    )


def test_drop_orphan_function_calls_keeps_lone_reasoning_when_no_tool_calls_dropped() -> None:
    # Server-managed conversations (or compaction) may forward standalone reasoning items whose
    # required following item lives in the server-side conversation. We must not drop those.
    payload: list[Any] = [
        cast(TResponseInputItem, {"type": "reasoning", "id": "rs_lone", "summary": []}),
    ]

    filtered = run_items.drop_orphan_function_calls(cast(list[TResponseInputItem], payload))

    assert filtered == payload


def test_drop_orphan_function_calls_handles_tool_search_calls() -> None:
    payload: list[Any] = [
        cast(
            TResponseInputItem,
            {
                "type": "tool_search_call",
                "call_id": "tool_search_orphan",
                "arguments": {"query": "orphan"},
                "execution": "server",
                "status": "completed",
            },
        ),
        cast(
            TResponseInputItem,
            {
                "type": "tool_search_call",
                "call_id": "tool_search_keep",
                "arguments": {"query": "keep"},
                "execution": "server",
                "status": "completed",
            },
        ),
        cast(
            TResponseInputItem,
            {
                "type": "tool_search_output",
                "call_id": "tool_search_keep",
                "execution": "server",
                "status": "completed",
                "tools": [],
            },
        ),
    ]

    filtered = run_items.drop_orphan_function_calls(cast(list[TResponseInputItem], payload))

    assert any(
        isinstance(entry, dict)
        and entry.get("type") == "tool_search_call"
        and entry.get("call_id") == "tool_search_keep"
        for entry in filtered
    )
    assert not any(
        isinstance(entry, dict)
        and entry.get("type") == "tool_search_call"
        and entry.get("call_id") == "tool_search_orphan"
        for entry in filtered
    )


def test_drop_orphan_function_calls_preserves_hosted_tool_search_pairs_without_call_ids() -> None:
    payload: list[Any] = [
        cast(
            TResponseInputItem,
            {
                "type": "tool_search_call",
                "call_id": None,
                "arguments": {"query": "keep"},
                "execution": "server",
                "status": "completed",
            },
        ),
        cast(
            TResponseInputItem,
            {
                "type": "tool_search_output",
                "call_id": None,
                "execution": "server",
                "status": "completed",
                "tools": [],
            },
        ),
    ]

    filtered = run_items.drop_orphan_function_calls(cast(list[TResponseInputItem], payload))

    assert len(filtered) == 2
    assert cast(dict[str, Any], filtered[0])["type"] == "tool_search_call"
    assert cast(dict[str, Any], filtered[1])["type"] == "tool_search_output"


def test_drop_orphan_function_calls_matches_latest_anonymous_tool_search_call() -> None:
    payload: list[Any] = [
        cast(
            TResponseInputItem,
            {
                "type": "tool_search_call",
                "call_id": None,
                "arguments": {"query": "orphan"},
                "execution": "server",
                "status": "completed",
            },
        ),
        cast(
            TResponseInputItem,
            {
                "type": "tool_search_call",
                "call_id": None,
                "arguments": {"query": "paired"},
                "execution": "server",
                "status": "completed",
            },
        ),
        cast(
            TResponseInputItem,
            {
                "type": "tool_search_output",
                "call_id": None,
                "execution": "server",
                "status": "completed",
                "tools": [],
            },
        ),
    ]

    filtered = run_items.drop_orphan_function_calls(cast(list[TResponseInputItem], payload))

    assert [cast(dict[str, Any], item)["type"] for item in filtered] == [
        "tool_search_call",
        "tool_search_output",
    ]
    assert cast(dict[str, Any], filtered[0])["arguments"] == {"query": "paired"}


def test_drop_orphan_function_calls_does_not_pair_named_tool_search_with_anonymous_output() -> None:
    payload: list[Any] = [
        cast(
            TResponseInputItem,
            {
                "type": "tool_search_call",
                "call_id": "orphan_search",
                "arguments": {"query": "keep"},
                "execution": "server",
                "status": "completed",
            },
        ),
        cast(
            TResponseInputItem,
            {
                "type": "tool_search_output",
                "call_id": None,
                "execution": "server",
                "status": "completed",
                "tools": [],
            },
        ),
    ]

    filtered = run_items.drop_orphan_function_calls(cast(list[TResponseInputItem], payload))

    assert [cast(dict[str, Any], item)["type"] for item in filtered] == ["tool_search_output"]


def test_drop_orphan_function_calls_keeps_reasoning_chain_before_non_dropped_item() -> None:
    payload: list[Any] = [
        cast(TResponseInputItem, {"type": "reasoning", "id": "rs_1", "summary": []}),
        cast(TResponseInputItem, {"type": "reasoning", "id": "rs_2", "summary": []}),
        cast(TResponseInputItem, {"type": "message", "role": "assistant", "content": []}),
        cast(
            TResponseInputItem,
            {
                "type": "function_call",
                "call_id": "orphan_call",
                "name": "orphan",
                "arguments": "{}",
            },
        ),
    ]

    filtered = run_items.drop_orphan_function_calls(cast(list[TResponseInputItem], payload))

    assert [cast(dict[str, Any], item)["id"] for item in filtered[:2]] == ["rs_1", "rs_2"]
    assert [cast(dict[str, Any], item)["type"] for item in filtered] == [
        "reasoning",
        "reasoning",
        "message",
    ]


def test_normalize_and_ensure_input_item_format_keep_non_dict_entries() -> None:
    item = cast(TResponseInputItem, "raw-item")
    assert run_items.ensure_input_item_format(item) == item
    assert run_items.normalize_input_items_for_api([item]) == [item]


def test_fingerprint_input_item_handles_edge_cases(monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_items.fingerprint_input_item(None) is None

    fingerprint = run_items.fingerprint_input_item(
        cast(
            TResponseInputItem, {"id": "id-1", "type": "message", "role": "user", "content": "hi"}
        ),
        ignore_ids_for_matching=True,
    )
    assert fingerprint is not None
    assert '"id"' not in fingerprint

    class _BrokenModelDump:
        def model_dump(self, *_args: Any, **kwargs: Any) -> dict[str, Any]:
            if "warnings" in kwargs:
                raise TypeError("warnings arg unsupported")
            raise RuntimeError("still broken")

    assert run_items.fingerprint_input_item(_BrokenModelDump()) is None
    assert run_items._model_dump_without_warnings(object()) is None

    class _Opaque:
        pass

    monkeypatch.setattr(
        run_items,
        "ensure_input_item_format",
        lambda _item: {"id": "internal-id", "type": "message", "role": "user", "content": "x"},
    )
    opaque_fingerprint = run_items.fingerprint_input_item(_Opaque(), ignore_ids_for_matching=True)
    assert opaque_fingerprint is not None
    assert '"id"' not in opaque_fingerprint


def test_fingerprint_input_item_returns_none_when_serialization_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def _raise_json_error(*_args: Any, **_kwargs: Any) -> str:
        raise RuntimeError("boom")

    monkeypatch.setattr(cast(Any, run_items).json, "dumps", _raise_json_error)

    assert run_items.fingerprint_input_item({"type": "message", "role": "user"}) is None


def test_digest_input_item_is_fixed_size_and_content_opaque() -> None:
    item = cast(
        TResponseInputItem,
        {"type": "message", "role": "assistant", "content": "sensitive-history-content"},
    )

    digest = run_items.digest_input_item(item)

    assert digest is not None
    assert len(digest) == 64
    assert "sensitive-history-content" not in digest


def test_nested_history_digest_treats_default_assistant_status_as_equivalent() -> None:
    without_status = cast(
        TResponseInputItem,
        {"type": "message", "role": "assistant", "content": "same"},
    )
    with_completed_status = cast(
        TResponseInputItem,
        {
            "type": "message",
            "role": "assistant",
            "content": "same",
            "status": "completed",
        },
    )

    assert run_items.digest_input_item(without_status) == run_items.digest_input_item(
        with_completed_status
    )


def test_resumed_input_normalizes_clean_nested_history_items() -> None:
    item = cast(TResponseInputItem, {"role": "assistant", "content": "same"})

    resumed = run_items.normalize_resumed_input([item])

    assert isinstance(resumed, list)
    assert resumed == [item]


def test_filter_nested_history_owned_refs_requires_the_exact_input_occurrence() -> None:
    item = cast(TResponseInputItem, {"role": "assistant", "content": "same"})
    equal_item = cast(TResponseInputItem, dict(item))
    digest = run_items.digest_input_item(item)
    assert digest is not None
    item_ref = run_items.NestedHistoryOwnedItemRef(
        session_index=1,
        digest=digest,
        input_index=0,
        input_item=item,
    )

    assert run_items.filter_nested_history_owned_item_refs_for_input([equal_item], [item_ref]) == []
    assert run_items.filter_nested_history_owned_item_refs_for_input(
        [equal_item, item],
        [item_ref],
    ) == [dataclasses.replace(item_ref, input_index=1)]


def test_reconcile_nested_history_rewrite_rejects_ambiguous_equal_occurrences() -> None:
    item = cast(TResponseInputItem, {"role": "assistant", "content": "same"})
    equal_item = cast(TResponseInputItem, dict(item))
    digest = run_items.digest_input_item(item)
    assert digest is not None
    item_ref = run_items.NestedHistoryOwnedItemRef(
        session_index=0,
        digest=digest,
        input_index=0,
        input_item=item,
    )

    rewritten, retained = run_items.reconcile_nested_history_owned_input_after_rewrite(
        [item, equal_item],
        [
            cast(TResponseInputItem, dict(item)),
            cast(TResponseInputItem, dict(equal_item)),
        ],
        [item_ref],
    )

    assert retained == []
    assert rewritten == [item, equal_item]


def test_reconcile_nested_history_rewrite_keeps_fully_owned_equal_occurrences() -> None:
    items = [
        cast(TResponseInputItem, {"role": "assistant", "content": "same"}),
        cast(TResponseInputItem, {"role": "assistant", "content": "same"}),
    ]
    digest = run_items.digest_input_item(items[0])
    assert digest is not None
    item_refs = [
        run_items.NestedHistoryOwnedItemRef(
            session_index=index,
            digest=digest,
            input_index=index,
            input_item=items[index],
        )
        for index in range(2)
    ]

    rewritten, retained = run_items.reconcile_nested_history_owned_input_after_rewrite(
        items,
        [
            cast(TResponseInputItem, dict(items[0])),
            cast(TResponseInputItem, dict(items[1])),
        ],
        item_refs,
    )

    assert retained == item_refs
    assert [item_ref.input_item for item_ref in retained] == rewritten


def test_nested_history_occurrence_resolution_reads_sequences_linearly() -> None:
    class CountingSequence:
        def __init__(self, values: list[Any]):
            self.values = values
            self.reads = 0

        def __len__(self) -> int:
            return len(self.values)

        def __getitem__(self, index: int) -> Any:
            self.reads += 1
            return self.values[index]

    count = 100
    agent = Agent(name="A")
    session_items = [
        ToolCallItem(
            agent=agent,
            raw_item=ResponseFunctionToolCall(
                id=f"fc_{index}",
                call_id=f"call_{index}",
                name="lookup",
                arguments="{}",
                type="function_call",
                status="completed",
            ),
        )
        for index in range(count)
    ]
    input_items = cast(
        list[TResponseInputItem],
        [run_items.run_item_to_input_item(item) for item in session_items],
    )
    assert all(item is not None for item in input_items)
    refs = [
        run_items.NestedHistoryOwnedItemRef(
            session_index=-1,
            digest=cast(str, run_items.digest_input_item(input_items[index])),
            input_index=index,
            run_item=session_items[index],
            input_item=input_items[index],
        )
        for index in range(count)
    ]

    counted_input = CountingSequence(input_items)
    retained_refs = run_items.filter_nested_history_owned_item_refs_for_input(
        cast(Any, counted_input), refs
    )
    assert len(retained_refs) == count
    assert counted_input.reads < count * 4

    counted_session = CountingSequence(session_items)
    assert run_items.resolve_nested_history_owned_item_indexes(
        cast(Any, counted_session), refs
    ) == set(range(count))
    assert counted_session.reads < count * 4

    counted_input = CountingSequence(input_items)
    counted_session = CountingSequence(session_items)
    rebased_refs = run_items.rebase_nested_history_owned_item_refs(
        cast(Any, counted_input), cast(Any, counted_session), refs
    )
    assert len(rebased_refs) == count
    assert counted_input.reads + counted_session.reads < count * 8


def test_strip_metadata_and_reasoning_id_helpers_keep_non_matching_items() -> None:
    raw = cast(TResponseInputItem, "raw-item")
    non_reasoning = cast(TResponseInputItem, {"type": "message", "id": "msg_1"})
    reasoning_without_id = cast(TResponseInputItem, {"type": "reasoning", "summary": []})

    assert run_items.strip_internal_input_item_metadata(raw) == raw
    assert run_items._without_reasoning_item_id(raw) == raw
    assert run_items._without_reasoning_item_id(non_reasoning) == non_reasoning
    assert run_items._without_reasoning_item_id(reasoning_without_id) == reasoning_without_id


def test_deduplicate_input_items_handles_fake_ids_and_approval_request_ids() -> None:
    items: list[Any] = [
        cast(
            TResponseInputItem,
            {
                "type": "function_call_output",
                "id": FAKE_RESPONSES_ID,
                "call_id": "call-1",
                "output": "first",
            },
        ),
        cast(
            TResponseInputItem,
            {
                "type": "function_call_output",
                "id": FAKE_RESPONSES_ID,
                "call_id": "call-1",
                "output": "latest",
            },
        ),
        cast(
            TResponseInputItem,
            {
                "type": "mcp_approval_response",
                "approval_request_id": "req-1",
                "approve": True,
            },
        ),
        cast(
            TResponseInputItem,
            {
                "type": "mcp_approval_response",
                "approval_request_id": "req-1",
                "approve": False,
            },
        ),
        cast(TResponseInputItem, "plain"),
    ]

    deduplicated = run_items.deduplicate_input_items(cast(list[TResponseInputItem], items))
    assert len(deduplicated) == 3
    assert cast(list[Any], deduplicated)[-1] == "plain"

    latest = run_items.deduplicate_input_items_preferring_latest(
        cast(list[TResponseInputItem], items[:2])
    )
    assert len(latest) == 1
    latest_output = cast(dict[str, Any], latest[0])
    assert latest_output["output"] == "latest"


def test_extract_mcp_request_id_supports_dicts_and_objects() -> None:
    assert (
        run_items.extract_mcp_request_id(
            {"provider_data": {"id": "provider-id"}, "id": "fallback-id"}
        )
        == "provider-id"
    )
    assert run_items.extract_mcp_request_id({"call_id": "call-id"}) == "call-id"

    class _WithProviderData:
        provider_data = {"id": "from-provider"}

    assert run_items.extract_mcp_request_id(_WithProviderData()) == "from-provider"

    class _BrokenObject:
        @property
        def provider_data(self) -> dict[str, Any]:
            raise RuntimeError("boom")

        def __getattr__(self, _name: str) -> Any:
            raise RuntimeError("boom")

    assert run_items.extract_mcp_request_id(_BrokenObject()) is None


def test_extract_mcp_request_id_from_run_variants() -> None:
    class _Run:
        def __init__(self, request_item: Any = None, requestItem: Any = None) -> None:
            self.request_item = request_item
            self.requestItem = requestItem

    class _RequestObject:
        provider_data = {"id": "provider-object"}
        id = "object-id"
        call_id = "object-call-id"

    assert (
        run_items.extract_mcp_request_id_from_run(
            _Run(request_item={"provider_data": {"id": "provider-dict"}, "id": "fallback"})
        )
        == "provider-dict"
    )
    assert (
        run_items.extract_mcp_request_id_from_run(_Run(request_item={"id": "dict-id"})) == "dict-id"
    )
    assert (
        run_items.extract_mcp_request_id_from_run(_Run(request_item=_RequestObject()))
        == "provider-object"
    )
    assert (
        run_items.extract_mcp_request_id_from_run(_Run(requestItem={"call_id": "camel-call"}))
        == "camel-call"
    )


def test_run_item_to_input_item_preserves_reasoning_item_ids_by_default() -> None:
    agent = Agent(name="A")
    reasoning = ReasoningItem(
        agent=agent,
        raw_item=ResponseReasoningItem(
            type="reasoning",
            id="rs_123",
            summary=[],
        ),
    )

    result = run_items.run_item_to_input_item(reasoning)

    assert isinstance(result, dict)
    assert result.get("type") == "reasoning"
    assert result.get("id") == "rs_123"


def test_run_item_to_input_item_omits_reasoning_item_ids_when_configured() -> None:
    agent = Agent(name="A")
    reasoning = ReasoningItem(
        agent=agent,
        raw_item=ResponseReasoningItem(
            type="reasoning",
            id="rs_456",
            summary=[],
        ),
    )

    result = run_items.run_item_to_input_item(reasoning, "omit")

    assert isinstance(result, dict)
    assert result.get("type") == "reasoning"
    assert "id" not in result


def test_run_item_to_input_item_preserves_tool_search_items() -> None:
    agent = Agent(name="A")
    tool_search_call = ToolSearchCallItem(
        agent=agent,
        raw_item={"type": "tool_search_call", "queries": [{"search_term": "profile"}]},
    )
    tool_search_output = ToolSearchOutputItem(
        agent=agent,
        raw_item={"type": "tool_search_output", "results": [{"text": "Customer profile"}]},
    )

    converted_call = run_items.run_item_to_input_item(tool_search_call)
    converted_output = run_items.run_item_to_input_item(tool_search_output)

    assert isinstance(converted_call, dict)
    assert converted_call["type"] == "tool_search_call"
    assert isinstance(converted_output, dict)
    assert converted_output["type"] == "tool_search_output"


def test_run_item_to_input_item_strips_tool_search_created_by() -> None:
    agent = Agent(name="A")
    tool_search_call = ToolSearchCallItem(
        agent=agent,
        raw_item=ResponseToolSearchCall(
            id="tsc_123",
            type="tool_search_call",
            arguments={"query": "profile"},
            execution="client",
            status="completed",
            created_by="server",
        ),
    )
    tool_search_output = ToolSearchOutputItem(
        agent=agent,
        raw_item=ResponseToolSearchOutputItem(
            id="tso_123",
            type="tool_search_output",
            execution="client",
            status="completed",
            tools=[],
            created_by="server",
        ),
    )

    converted_call = run_items.run_item_to_input_item(tool_search_call)
    converted_output = run_items.run_item_to_input_item(tool_search_output)

    assert isinstance(converted_call, dict)
    assert converted_call["type"] == "tool_search_call"
    assert "created_by" not in converted_call
    assert isinstance(converted_output, dict)
    assert converted_output["type"] == "tool_search_output"
    assert "created_by" not in converted_output


def test_run_item_to_input_item_strips_function_call_created_by() -> None:
    agent = Agent(name="A")
    tool_call = ToolCallItem(
        agent=agent,
        raw_item=ResponseFunctionToolCall.model_validate(
            {
                "id": "fc_1",
                "arguments": "{}",
                "call_id": "call_1",
                "name": "lookup",
                "type": "function_call",
                "created_by": "server",
            }
        ),
    )

    converted = run_items.run_item_to_input_item(tool_call)

    assert isinstance(converted, dict)
    assert converted["type"] == "function_call"
    assert "created_by" not in converted


def test_run_item_to_input_item_omits_tool_call_metadata() -> None:
    agent = Agent(name="A")
    tool_call = ToolCallItem(
        agent=agent,
        raw_item=ResponseFunctionToolCall(
            id="fc_123",
            call_id="call_123",
            name="lookup_account",
            arguments="{}",
            type="function_call",
            status="completed",
        ),
        description="Lookup customer records.",
        title="Lookup Account",
    )

    result = run_items.run_item_to_input_item(tool_call)
    result_dict = cast(dict[str, Any], result)

    assert isinstance(result, dict)
    assert result_dict["type"] == "function_call"
    assert "description" not in result_dict
    assert "title" not in result_dict


def test_normalize_input_items_for_api_strips_internal_tool_call_metadata() -> None:
    item = cast(
        TResponseInputItem,
        {
            "type": "function_call",
            "call_id": "call_123",
            "name": "lookup_account",
            "arguments": "{}",
            run_items.TOOL_CALL_SESSION_DESCRIPTION_KEY: "Lookup customer records.",
            run_items.TOOL_CALL_SESSION_TITLE_KEY: "Lookup Account",
        },
    )

    normalized = run_items.normalize_input_items_for_api([item])
    normalized_item = cast(dict[str, Any], normalized[0])

    assert run_items.TOOL_CALL_SESSION_DESCRIPTION_KEY not in normalized_item
    assert run_items.TOOL_CALL_SESSION_TITLE_KEY not in normalized_item


def test_fingerprint_input_item_ignores_internal_tool_call_metadata() -> None:
    base_item = cast(
        TResponseInputItem,
        {
            "type": "function_call",
            "call_id": "call_123",
            "name": "lookup_account",
            "arguments": "{}",
        },
    )
    with_metadata = cast(
        TResponseInputItem,
        {
            **cast(dict[str, Any], base_item),
            run_items.TOOL_CALL_SESSION_DESCRIPTION_KEY: "Lookup customer records.",
            run_items.TOOL_CALL_SESSION_TITLE_KEY: "Lookup Account",
        },
    )

    assert run_items.fingerprint_input_item(base_item) == run_items.fingerprint_input_item(
        with_metadata
    )


def test_run_result_to_input_list_preserves_tool_search_items() -> None:
    agent = Agent(name="A")
    result = RunResult(
        input="Find CRM tools",
        new_items=[
            ToolSearchCallItem(
                agent=agent,
                raw_item={"type": "tool_search_call", "queries": [{"search_term": "profile"}]},
            ),
            ToolSearchOutputItem(
                agent=agent,
                raw_item={"type": "tool_search_output", "results": [{"text": "Customer profile"}]},
            ),
        ],
        raw_responses=[],
        final_output="done",
        input_guardrail_results=[],
        output_guardrail_results=[],
        tool_input_guardrail_results=[],
        tool_output_guardrail_results=[],
        context_wrapper=RunContextWrapper(context=None),
        _last_agent=agent,
    )

    input_items = result.to_input_list()

    assert len(input_items) == 3
    assert cast(dict[str, Any], input_items[1])["type"] == "tool_search_call"
    assert cast(dict[str, Any], input_items[2])["type"] == "tool_search_output"


def test_coerce_tool_search_output_raw_item_rejects_legacy_type() -> None:
    with pytest.raises(AgentsException, match="Unexpected tool search output item type"):
        coerce_tool_search_output_raw_item({"type": "tool_search_result", "results": []})


def test_deduplicate_input_items_preferring_latest_keeps_original_order() -> None:
    call = cast(
        TResponseInputItem,
        {"type": "function_call", "call_id": "call-1", "name": "tool", "arguments": "{}"},
    )
    output = cast(
        TResponseInputItem,
        {"type": "function_call_output", "call_id": "call-1", "output": "result"},
    )
    message = cast(TResponseInputItem, {"role": "assistant", "content": "ack"})
    repeated_call = cast(
        TResponseInputItem,
        {"type": "function_call", "call_id": "call-1", "name": "tool", "arguments": "{}"},
    )

    deduplicated = run_items.deduplicate_input_items_preferring_latest(
        [call, output, message, repeated_call]
    )

    # The repeated call collapses onto the first occurrence, so the call still precedes its
    # output. Relocating it to the end would produce an item order the Responses API rejects.
    assert [cast(dict[str, Any], item).get("type") for item in deduplicated] == [
        "function_call",
        "function_call_output",
        None,
    ]
    assert cast(dict[str, Any], deduplicated[2])["role"] == "assistant"


def test_deduplicate_input_items_preferring_latest_keeps_latest_output_position() -> None:
    old_output = cast(
        TResponseInputItem,
        {"type": "function_call_output", "call_id": "call-1", "output": "old"},
    )
    message = cast(TResponseInputItem, {"role": "user", "content": "next"})
    new_output = cast(
        TResponseInputItem,
        {"type": "function_call_output", "call_id": "call-1", "output": "new"},
    )

    deduplicated = run_items.deduplicate_input_items_preferring_latest(
        [old_output, message, new_output]
    )

    assert len(deduplicated) == 2
    assert cast(dict[str, Any], deduplicated[0])["content"] == "next"
    assert cast(dict[str, Any], deduplicated[1])["output"] == "new"


def test_deduplicate_input_items_preferring_latest_keeps_output_after_matching_call() -> None:
    old_output = cast(
        TResponseInputItem,
        {"type": "function_call_output", "call_id": "call-1", "output": "old"},
    )
    call = cast(
        TResponseInputItem,
        {"type": "function_call", "call_id": "call-1", "name": "tool", "arguments": "{}"},
    )
    new_output = cast(
        TResponseInputItem,
        {"type": "function_call_output", "call_id": "call-1", "output": "new"},
    )

    deduplicated = run_items.deduplicate_input_items_preferring_latest(
        [old_output, call, new_output]
    )

    assert [cast(dict[str, Any], item).get("type") for item in deduplicated] == [
        "function_call",
        "function_call_output",
    ]
    assert cast(dict[str, Any], deduplicated[1])["output"] == "new"


def test_deduplicate_input_items_preferring_latest_keeps_reasoning_before_follower() -> None:
    old_reasoning = cast(
        TResponseInputItem,
        {
            "type": "reasoning",
            "id": "rs-1",
            "summary": [{"type": "summary_text", "text": "old"}],
        },
    )
    call = cast(
        TResponseInputItem,
        {"type": "function_call", "call_id": "call-1", "name": "tool", "arguments": "{}"},
    )
    new_reasoning = cast(
        TResponseInputItem,
        {
            "type": "reasoning",
            "id": "rs-1",
            "summary": [{"type": "summary_text", "text": "new"}],
        },
    )

    deduplicated = run_items.deduplicate_input_items_preferring_latest(
        [old_reasoning, call, new_reasoning]
    )

    assert [cast(dict[str, Any], item).get("type") for item in deduplicated] == [
        "reasoning",
        "function_call",
    ]
    assert cast(dict[str, Any], deduplicated[0])["summary"] == [
        {"type": "summary_text", "text": "new"}
    ]


def test_deduplicate_input_items_preferring_latest_keeps_approval_request_before_response() -> None:
    old_request = cast(
        TResponseInputItem,
        {
            "type": "mcp_approval_request",
            "id": "approval-1",
            "arguments": "old",
            "name": "lookup",
            "server_label": "server",
        },
    )
    response = cast(
        TResponseInputItem,
        {
            "type": "mcp_approval_response",
            "approval_request_id": "approval-1",
            "approve": True,
        },
    )
    new_request = cast(
        TResponseInputItem,
        {
            "type": "mcp_approval_request",
            "id": "approval-1",
            "arguments": "new",
            "name": "lookup",
            "server_label": "server",
        },
    )

    deduplicated = run_items.deduplicate_input_items_preferring_latest(
        [old_request, response, new_request]
    )

    assert [cast(dict[str, Any], item).get("type") for item in deduplicated] == [
        "mcp_approval_request",
        "mcp_approval_response",
    ]
    assert cast(dict[str, Any], deduplicated[0])["arguments"] == "new"


def test_deduplicate_input_items_preferring_latest_leaves_unique_items_untouched() -> None:
    items = [
        cast(TResponseInputItem, {"role": "user", "content": "hi"}),
        cast(
            TResponseInputItem,
            {"type": "function_call", "call_id": "call-1", "name": "tool", "arguments": "{}"},
        ),
        cast(
            TResponseInputItem,
            {"type": "function_call_output", "call_id": "call-1", "output": "result"},
        ),
        cast(TResponseInputItem, {"role": "user", "content": "hi"}),
    ]

    assert run_items.deduplicate_input_items_preferring_latest(items) == items
