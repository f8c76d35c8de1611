"""What the early-start fault rows share: held provider streams, a recorded run, checks.

A `HeldSse` reply is a real provider stream (Anthropic Messages or OpenAI Chat
Completions, as the official SDKs read it) that stops after a tool call has
streamed and waits, in the server's thread, until the test lets it go: the
rendezvous that proves a call started (or did not start) before its response
was final. After the hold it ends as the row's fault says: cut at
``max_tokens`` (``finish_reason: length``), dropped mid-body (the gateway
retries), or never (the run is interrupted first).
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

import toolweave as tw
from toolweave.events import Event, RunFinished, ToolResultReady, ToolUseStarted
from toolweave.scheduling import classify
from toolweave.sessions import (
    AccessRecord,
    CallRecord,
    SessionRecorder,
    SQLiteSessionStore,
)

sys.path.insert(0, str(Path(__file__).parents[1] / "models" / "sdk"))
from models_loopback import SseReply

HOLD_TIMEOUT = 30.0
"""Seconds a held stream waits for the test at most (a failing test must end)."""


@dataclass(frozen=True)
class HeldSse(SseReply):
    """An SSE reply that waits on `hold` after its first `hold_after` events.

    With `cut_after_events` equal to `hold_after`, the connection is dropped
    once the hold is released (a stream that dies mid-body).
    """

    hold_after: int = 0
    hold: threading.Event = field(default_factory=threading.Event)

    @property
    def events(self) -> Iterator[str]:  # lazily, with a wait
        events = [e + "\n\n" for e in self.raw.strip("\n").split("\n\n") if e.strip()]
        yield from events[: self.hold_after]
        self.hold.wait(HOLD_TIMEOUT)
        yield from events[self.hold_after :]


# -- provider streams --------------------------------------------------------------


def _sse(event: str | None, data: object) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n"


@dataclass(frozen=True)
class Wire:
    """One provider's stream shapes."""

    provider: str
    """``anthropic`` or ``openai_chat``."""

    def calls_then(
        self, calls: Sequence[tuple[str, str, dict[str, Any]]], end: str
    ) -> tuple[str, int]:
        """A stream of `calls` (id, name, input), then text, then `end`; and its hold point.

        The hold point is the number of events after which every call is
        complete as the stream mapper sees it, and a text delta followed it.
        `end`: ``max_tokens`` (cut at the limit, with a last call left
        half-written), ``tool_use`` (a normal end) or ``cut`` (the caller drops
        the connection at the hold point).
        """
        if self.provider == "anthropic":
            return _anthropic(calls, end)
        return _chat(calls, end)

    def text(self, text: str) -> str:
        """A plain final answer."""
        if self.provider == "anthropic":
            return "".join(
                [
                    _sse("message_start", _anthropic_start()),
                    _sse(
                        "content_block_start",
                        {
                            "type": "content_block_start",
                            "index": 0,
                            "content_block": {"type": "text", "text": ""},
                        },
                    ),
                    _sse("content_block_delta", _anthropic_text(0, text)),
                    _sse(
                        "content_block_stop", {"type": "content_block_stop", "index": 0}
                    ),
                    _sse("message_delta", _anthropic_stop("end_turn")),
                    _sse("message_stop", {"type": "message_stop"}),
                ]
            )
        return "".join(
            [
                _chat_chunk({"role": "assistant", "content": ""}),
                _chat_chunk({"content": text}),
                _chat_chunk({}, finish="stop"),
                _chat_usage(),
                "data: [DONE]\n\n",
            ]
        )


def _anthropic_start() -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_early",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 40, "output_tokens": 1},
        },
    }


def _anthropic_text(index: int, text: str) -> dict[str, Any]:
    return {
        "type": "content_block_delta",
        "index": index,
        "delta": {"type": "text_delta", "text": text},
    }


def _anthropic_stop(reason: str) -> dict[str, Any]:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": reason, "stop_sequence": None},
        "usage": {"output_tokens": 30},
    }


def _anthropic_call(index: int, call_id: str, name: str, arguments: str) -> list[str]:
    start = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    delta = {"type": "input_json_delta", "partial_json": arguments}
    return [
        _sse(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        ),
        _sse(
            "content_block_delta",
            {"type": "content_block_delta", "index": index, "delta": delta},
        ),
    ]


def _anthropic_block_stop(index: int) -> str:
    return _sse("content_block_stop", {"type": "content_block_stop", "index": index})


def _anthropic(
    calls: Sequence[tuple[str, str, dict[str, Any]]], end: str
) -> tuple[str, int]:
    out = [_sse("message_start", _anthropic_start())]
    for index, (call_id, name, args) in enumerate(calls):
        out += _anthropic_call(index, call_id, name, json.dumps(args))
        out.append(_anthropic_block_stop(index))
    text = len(calls)
    block = {"type": "content_block_start", "index": text}
    out += [
        _sse(
            "content_block_start",
            {**block, "content_block": {"type": "text", "text": ""}},
        ),
        _sse("content_block_delta", _anthropic_text(text, "Now the long part")),
    ]
    hold = len(out)
    out += [
        _sse("content_block_delta", _anthropic_text(text, ", which goes on and on")),
        _anthropic_block_stop(text),
    ]
    if end == "max_tokens":  # cut inside the next call: no content_block_stop
        out += _anthropic_call(text + 1, "toolu_cut", "note", '{"text": "half a')
        out.append(_sse("message_delta", _anthropic_stop("max_tokens")))
    else:
        out += _anthropic_call(text + 1, "toolu_note", "note", '{"text": "x"}')
        out.append(_anthropic_block_stop(text + 1))
        out.append(_sse("message_delta", _anthropic_stop("tool_use")))
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return "".join(out), hold


def _chat_chunk(delta: dict[str, Any], *, finish: str | None = None) -> str:
    return _sse(
        None,
        {
            "id": "chatcmpl-early",
            "object": "chat.completion.chunk",
            "created": 1767225600,
            "model": "gpt-4.1-2025-04-14",
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            ],
            "usage": None,
        },
    )


def _chat_usage() -> str:
    return _sse(
        None,
        {
            "id": "chatcmpl-early",
            "object": "chat.completion.chunk",
            "created": 1767225600,
            "model": "gpt-4.1-2025-04-14",
            "choices": [],
            "usage": {"prompt_tokens": 40, "completion_tokens": 30, "total_tokens": 70},
        },
    )


def _chat_call(index: int, call_id: str, name: str, arguments: str) -> list[str]:
    start = {
        "index": index,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": ""},
    }
    out = [_chat_chunk({"tool_calls": [start]})]
    if arguments:
        out.append(
            _chat_chunk(
                {"tool_calls": [{"index": index, "function": {"arguments": arguments}}]}
            )
        )
    return out


def _chat(
    calls: Sequence[tuple[str, str, dict[str, Any]]], end: str
) -> tuple[str, int]:
    # Chat completes call N when call N+1 starts (or at the end): every call
    # streamed before the hold is followed by the start of one more.
    out = [_chat_chunk({"role": "assistant", "content": ""})]
    for index, (call_id, name, args) in enumerate(calls):
        out += _chat_call(index, call_id, name, json.dumps(args))
    out += _chat_call(len(calls), "call_note", "note", "")
    out.append(_chat_chunk({"content": "Now the long part"}))  # after every call
    hold = len(out)
    if end == "max_tokens":
        out += [
            _chat_chunk(
                {
                    "tool_calls": [
                        {
                            "index": len(calls),
                            "function": {"arguments": '{"text": "half a'},
                        }
                    ]
                }
            ),
            _chat_chunk({}, finish="length"),
            _chat_usage(),
            "data: [DONE]\n\n",
        ]
    else:
        out += [
            _chat_chunk(
                {
                    "tool_calls": [
                        {
                            "index": len(calls),
                            "function": {"arguments": '{"text": "x"}'},
                        }
                    ]
                }
            ),
            _chat_chunk({}, finish="tool_calls"),
            _chat_usage(),
            "data: [DONE]\n\n",
        ]
    return "".join(out), hold


def held(
    wire: Wire, calls: Sequence[tuple[str, str, dict[str, Any]]], end: str
) -> HeldSse:
    """`Wire.calls_then` as a reply held at its hold point (`end="cut"`: dropped there)."""
    raw, hold = wire.calls_then(calls, end)
    return HeldSse(
        raw, hold_after=hold, cut_after_events=hold if end == "cut" else None
    )


# -- a recorded run ----------------------------------------------------------------


@dataclass
class Recorded:
    """A run's events, as they came, and the session store it was recorded in."""

    store: SQLiteSessionStore
    recorder: SessionRecorder
    events: list[Event] = field(default_factory=list)
    seen: dict[type, anyio.Event] = field(default_factory=dict)

    @property
    def finished(self) -> RunFinished:
        last = self.events[-1]
        assert isinstance(last, RunFinished)
        return last

    def calls(self) -> list[CallRecord]:
        return self.store.calls(self.recorder.session_id)

    def wait_for(self, kind: type) -> anyio.Event:
        """An event set once an event of `kind` arrived."""
        if kind not in self.seen:
            self.seen[kind] = anyio.Event()
            if any(isinstance(e, kind) for e in self.events):
                self.seen[kind].set()
        return self.seen[kind]

    def take(self, event: Event) -> None:
        self.recorder.record(event)
        self.events.append(event)
        for kind, flag in self.seen.items():
            if isinstance(event, kind):
                flag.set()


def recorded(tmp_path: Path, registry: tw.ToolRegistry) -> Recorded:
    """A fresh on-disk SQLite session and a recorder for one run."""
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    sid = store.create_session(workspace=str(tmp_path), model="loopback", title="t").id

    def describe(call: tw.ToolCall) -> AccessRecord:
        access = classify(call, registry).access
        return AccessRecord(access.reads, access.writes)

    return Recorded(
        store, SessionRecorder(store, sid, model="loopback", describe=describe)
    )


async def drive(
    agent: tw.Agent,
    record: Recorded,
    *,
    prompt: str = "go",
    during: Callable[[tw.loop.AgentRun], Any] | None = None,
) -> tw.RunResult:
    """Run `agent`, recording every event; `during(run)` runs beside it (awaited)."""
    async with agent.open_run(prompt) as run, anyio.create_task_group() as tg:

        async def consume() -> None:
            async for event in run.events():
                record.take(event)

        tg.start_soon(consume)
        if during is not None:
            await during(run)
    assert run.result is not None
    return run.result


# -- checks -------------------------------------------------------------------------


def assert_events_paired(events: Sequence[Event]) -> None:
    """Every ToolUseStarted has exactly one ToolResultReady after it, by call key."""
    started = [e.call.ref for e in events if isinstance(e, ToolUseStarted)]
    ended = [e.call.ref for e in events if isinstance(e, ToolResultReady)]
    assert len(started) == len(set(started)), f"a call started twice: {started}"
    assert len(ended) == len(set(ended)), f"a call ended twice: {ended}"
    assert set(started) <= set(ended), (
        f"started, never ended: {set(started) - set(ended)}"
    )
    for ref in started:
        first_start = next(
            i
            for i, e in enumerate(events)
            if isinstance(e, ToolUseStarted) and e.call.ref == ref
        )
        end = next(
            i
            for i, e in enumerate(events)
            if isinstance(e, ToolResultReady) and e.call.ref == ref
        )
        assert first_start < end, f"{ref} ended before it started"


def last_ready(events: Sequence[Event], ref: str) -> tw.ToolResult:
    """The result the last ToolResultReady of the call `ref` carried."""
    return [
        e.result for e in events if isinstance(e, ToolResultReady) and e.call.ref == ref
    ][-1]


def results_in(messages: Sequence[tw.Message]) -> dict[str, tw.ToolResult]:
    """Every tool result of a transcript, by call id."""
    return {r.call_id: r for m in messages for r in m.tool_results}
