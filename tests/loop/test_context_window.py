"""Never send a request known to overflow the window (issue 29, item 2).

Through `tw.Agent` and the official SDKs against a loopback server speaking
Anthropic Messages and OpenAI Chat Completions; the server counts every
request, so "never sent" is shown, not assumed. Real Korean tool output (the
class that chars ÷ 4 underestimated threefold), JSON and code for the
estimator's table.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from window_support import (
    KOREAN,
    PROVIDERS,
    LoopbackServer,
    calls_reply,
    model_for,
    text_reply,
    too_long_reply,
    tool_result_texts,
)

import toolweave as tw
from toolweave._exceptions import AuthenticationError
from toolweave.events import (
    CompactBoundary,
    CompletionReason,
    Event,
    LoopTransition,
    RunFinished,
)
from toolweave.events import Warning as WarningEvent
from toolweave.loop import AgentConfig, transcript_problems
from toolweave.loop._clearing import CLEARED_MARKER
from toolweave.loop._conversation import Conversation
from toolweave.loop._refusal_sizes import stated_sizes
from toolweave.loop._tokens import text_tokens
from toolweave.loop._window import ContextGuard, ContextLevel
from toolweave.messages import Message, ModelResponse, Text, Usage
from toolweave.models import ScriptedModel
from toolweave.tools import tool

pytestmark = [
    pytest.mark.anyio,
    # Known, not of this module: on trio the openai SDK's inner SSE generators
    # are left unexhausted once toolweave has read a stream to [DONE] and closed
    # it, and trio's finaliser warns whenever the GC happens to collect them
    # (reproduced with the fault table's own streams outside pytest).
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

WINDOW = 4_096
OUTPUT = 512
LIMIT = WINDOW - OUTPUT
HANGUL = re.compile("[\uac00-\ud7a3]")

JAPANESE = (
    "並列ツール実行では、安全に同時実行できる呼び出しだけを重ねて実行し、"
    "記録は直列実行と同じにする。"
)
CHINESE = (
    "并行工具执行只重叠可以安全同时运行的调用\uff0c其余按顺序执行\uff0c"
    "记录与串行执行完全相同。"
)
JSON_OUTPUT = json.dumps(
    [
        {"path": f"src/toolweave/loop/_m{i}.py", "size": 1000 + i, "ok": i % 2 == 0}
        for i in range(40)
    ]
)
CODE = """    def judge(self, tokens: int) -> ContextVerdict:
        window, limit = self.window, self.limit
        if window and limit is not None and tokens > limit:
            return ContextVerdict(ContextLevel.BLOCK, tokens=tokens)
        return {"level": 0, "tokens": tokens, "items": [1, 2, 3]}
"""
PROSE = (
    "The scheduler runs what is provably safe at the same time and keeps everything"
    " else in order, so the transcript is identical to serial execution. "
)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """asyncio, and trio on its real clock.

    The official SDKs wait on real sockets: under trio's autojumping MockClock
    every such wait would let virtual time jump to the SDK's timeout. Nothing
    here asserts a duration.
    """
    return request.param


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as loopback:
        yield loopback
    assert not loopback.unexpected, f"unscripted requests: {loopback.unexpected}"
    assert not loopback.errors, loopback.errors


@tool
async def fetch_doc(name: str) -> str:
    """A document in Korean (large)."""
    return f"# {name}\n" + KOREAN * 60


def _agent(
    provider: str, server: LoopbackServer, tmp_path: Path, **cfg: object
) -> tw.Agent:
    model = model_for(provider, server.url, window=cfg.pop("window", WINDOW))  # type: ignore[arg-type]
    config = AgentConfig(
        max_output_tokens=OUTPUT,
        results_dir=tmp_path / "results",
        **cfg,  # type: ignore[arg-type]
    )
    return tw.Agent(model, [fetch_doc], config=config)


async def _run(agent: tw.Agent, prompt: str) -> list[Event]:
    try:
        return [e async for e in agent.run_stream(prompt)]
    finally:
        await agent.aclose()
        await agent.model.aclose()  # the SDK client and its connections


def _finished(events: list[Event]) -> RunFinished:
    last = events[-1]
    assert isinstance(last, RunFinished)
    return last


# -- the estimator -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "low", "high"),
    [
        # tokens per character, as published tokenizers spend them (cl100k, o200k,
        # Claude's): Hangul/Han/kana about one a character; code and JSON 2.5 to 3.5
        # characters a token; English prose about 4.
        ("korean", KOREAN * 20, 0.6, 1.1),
        ("japanese", JAPANESE * 20, 0.8, 1.3),
        ("chinese", CHINESE * 20, 0.8, 1.3),
        ("json", JSON_OUTPUT, 1 / 3.5, 1 / 2.2),
        ("code", CODE * 10, 1 / 4.0, 1 / 2.2),
        ("prose", PROSE * 10, 1 / 5.0, 1 / 3.5),
        ("emoji", "🙂🚀" * 50, 1.5, 2.5),
    ],
)
def test_estimator_counts_each_script_at_its_own_rate(
    name: str, text: str, low: float, high: float
) -> None:
    rate = text_tokens(text) / len(text)
    assert low <= rate <= high, (name, rate)


def test_korean_is_estimated_far_above_chars_over_four() -> None:
    text = KOREAN * 100
    assert text_tokens(text) >= 2.5 * (len(text) // 4)


def test_provider_count_scales_later_estimates_up() -> None:
    conversation = Conversation([Message("user", "hello")])
    conversation.note_sent()
    first = ModelResponse([Text("ok")], usage=Usage(800, 5))
    conversation.note_response(first)  # a first count: hidden framing, no rate
    assert conversation.scale == 1.0
    conversation.append(first.to_message())
    conversation.append(Message("user", KOREAN * 10))
    conversation.note_sent()
    added = conversation.context_tokens() - 805
    # the provider counted twice what was estimated for what was added
    second = ModelResponse([Text("ok")], usage=Usage(805 + 2 * added, 5))
    conversation.note_response(second)
    assert conversation.scale == pytest.approx(2.0, rel=0.05)
    conversation.append(second.to_message())
    conversation.append(Message("user", KOREAN * 10))
    more = text_tokens(KOREAN * 10)
    assert conversation.context_tokens() >= 805 + 2 * added + 1.9 * more


def test_a_first_count_with_hidden_framing_teaches_no_rate() -> None:
    conversation = Conversation([Message("user", KOREAN * 10)])
    conversation.note_sent()
    conversation.note_response(ModelResponse([Text("ok")], usage=Usage(5_000, 5)))
    assert conversation.scale == 1.0


@pytest.mark.parametrize(
    ("message", "requested", "window"),
    [
        ("prompt is too long: 215000 tokens > 200000 maximum", 215_000, 200_000),
        (
            "This model's maximum context length is 128000 tokens. However, your"
            " messages resulted in 150123 tokens.",
            150_123,
            128_000,
        ),
        (
            "This model's maximum context length is 8192 tokens. However, you requested"
            " 9000 tokens (8000 in the messages, 1000 in the completion).",
            8_000,
            8_192,
        ),
        (
            "the request exceeds the available context size, try increasing it",
            None,
            None,
        ),
    ],
)
def test_stated_sizes_reads_each_providers_words(
    message: str, requested: int | None, window: int | None
) -> None:
    assert stated_sizes(message) == (requested, window)


def test_guard_grades_and_keeps_room_for_the_answer() -> None:
    guard = ContextGuard(4_000, output_tokens=4_096, warn_share=0.5, compact_share=0.6)
    assert guard.reserve == 1_000  # at most a quarter of the window
    assert guard.judge(1_999).level is ContextLevel.NONE
    assert guard.judge(2_000).level is ContextLevel.WARN
    assert guard.judge(2_400).level is ContextLevel.COMPACT
    assert guard.judge(3_000).level is ContextLevel.COMPACT
    assert guard.judge(3_001).level is ContextLevel.BLOCK
    assert not guard.fits(3_001) and guard.fits(3_000)
    assert ContextGuard(None, output_tokens=10).judge(10**9).level is ContextLevel.NONE


# -- through the Agent, on the wire -------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_prompt_that_cannot_fit_is_never_sent(
    provider: str, server: LoopbackServer, tmp_path: Path
) -> None:
    prompt = KOREAN * 60
    assert len(prompt) // 4 < LIMIT  # chars ÷ 4 would have sent it
    events = await _run(_agent(provider, server, tmp_path), prompt)
    done = _finished(events)
    assert done.reason is CompletionReason.CONTEXT_WINDOW_EXCEEDED
    assert server.requests == []  # never sent
    assert f"{WINDOW:,}" in done.detail and "not sent" in done.detail
    assert "first message" in done.detail


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_korean_tool_output_is_cleared_before_it_overflows(
    provider: str, server: LoopbackServer, tmp_path: Path
) -> None:
    server.script(
        calls_reply(provider, [("call_1", "fetch_doc", {"name": "spec"})]),
        text_reply(provider, "done"),
    )
    full = await fetch_doc.call(fetch_doc.parse({"name": "spec"}), None)  # type: ignore[arg-type]
    assert len(full) // 4 + 100 < LIMIT  # chars ÷ 4 would have sent it whole
    events = await _run(_agent(provider, server, tmp_path), "read the spec")
    done = _finished(events)
    assert done.reason is CompletionReason.COMPLETED
    assert len(server.requests) == 2
    (sent,) = tool_result_texts(server.requests[1].body, provider)
    assert sent.startswith(CLEARED_MARKER) and "fetch_doc" in sent
    assert not HANGUL.search(sent)
    saved = Path(sent.split("saved to ")[1].split(": read")[0])
    assert saved.read_text(encoding="utf-8") == full  # noqa: ASYNC240 - how to get it again
    warnings = [e.message for e in events if isinstance(e, WarningEvent)]
    assert any("would not fit" in w for w in warnings), warnings
    assert not transcript_problems(done.messages)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_prompt_too_long_learns_the_window_and_recovers(
    provider: str, server: LoopbackServer, tmp_path: Path
) -> None:
    """No window known: the provider's refusal says it, and the real size; the retry fits."""
    server.script(
        calls_reply(provider, [("call_1", "fetch_doc", {"name": "spec"})]),
        too_long_reply(provider, requested=5_300, window=WINDOW),
        text_reply(provider, "done"),
    )
    agent = _agent(provider, server, tmp_path, window=None)
    events = await _run(agent, "read the spec")
    done = _finished(events)
    assert done.reason is CompletionReason.COMPLETED, done.detail
    assert len(server.requests) == 3
    assert tool_result_texts(server.requests[1].body, provider)[0].startswith("# spec")
    retried = tool_result_texts(server.requests[2].body, provider)[0]
    assert retried.startswith(CLEARED_MARKER)
    assert any(
        isinstance(e, LoopTransition) and e.reason == "prompt_too_long_retry"
        for e in events
    )


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_prompt_too_long_with_nothing_to_drop_ends_honestly(
    provider: str, server: LoopbackServer, tmp_path: Path
) -> None:
    server.script(too_long_reply(provider, requested=9_000, window=2_000))
    agent = _agent(provider, server, tmp_path, window=None)
    events = await _run(agent, "summarise: " + KOREAN * 5)
    done = _finished(events)
    assert done.reason is CompletionReason.CONTEXT_WINDOW_EXCEEDED
    assert len(server.requests) == 1  # not retried unchanged
    assert "nothing more can be dropped" in done.detail
    assert "9000 tokens" in done.detail


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_with_the_breaker_open_no_request_overflows(
    provider: str, server: LoopbackServer, tmp_path: Path
) -> None:
    """Summaries fail and the breaker opens; every request sent still fits the window."""
    rounds = 5
    for i in range(rounds):
        server.script(
            calls_reply(
                provider,
                [(f"call_{i}", "fetch_doc", {"name": f"part {i}"})],
                input_tokens=60 + 1_000 * i,
            )
        )
    server.script(text_reply(provider, "done"))
    summariser = ScriptedModel(
        [AuthenticationError("no summaries")] * 10, name="summariser"
    )
    agent = _agent(
        provider,
        server,
        tmp_path,
        compaction_model=summariser,
        compaction_max_failures=1,
        compaction_keep_recent=2,
    )
    events = await _run(agent, "read all parts")
    done = _finished(events)
    assert done.reason is CompletionReason.COMPLETED, done.detail
    assert len(server.requests) == rounds + 1
    for request in server.requests:
        body = json.dumps(request.body, ensure_ascii=False)
        assert len(HANGUL.findall(body)) <= LIMIT  # at most one token a syllable
    warnings = [e.message for e in events if isinstance(e, WarningEvent)]
    assert any("auto-compaction is off" in w for w in warnings), warnings
    assert any(isinstance(e, CompactBoundary) for e in events)
    assert not transcript_problems(done.messages)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_filling_context_warns_once(
    provider: str, server: LoopbackServer, tmp_path: Path
) -> None:
    server.script(
        calls_reply(provider, [("call_1", "fetch_doc", {"name": "a"})]),
        text_reply(provider, "done"),
    )
    agent = _agent(
        provider,
        server,
        tmp_path,
        window=16_000,
        context_warning_threshold=0.1,
        compaction_threshold=None,
    )
    events = await _run(agent, "read a")
    assert _finished(events).reason is CompletionReason.COMPLETED
    filling = [
        e for e in events if isinstance(e, WarningEvent) and "filling up" in e.message
    ]
    assert len(filling) == 1, filling
    assert "16,000 tokens" in filling[0].message
