"""Neutral transcript blocks: what a conversation is made of, independent of any provider.

Every provider adapter translates to and from these types, so the loop, the
scheduler and the session store never see a vendor format. All values are frozen:
a transcript, once written, does not change under anyone's feet.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal, TypeAlias

from ._records import slot_setter

__all__ = [
    "AssistantBlock",
    "ContentBlock",
    "Image",
    "Message",
    "ModelResponse",
    "Role",
    "StopReason",
    "Text",
    "Thinking",
    "ToolCall",
    "ToolResult",
    "Usage",
]


class StopReason(enum.Enum):
    """Why the model stopped generating, in provider-neutral terms.

    Never trust it to decide whether a response is final: a response is final
    when it holds no tool calls.
    """

    END_TURN = "end_turn"
    TOOL_USE = "tool_use"
    MAX_TOKENS = "max_tokens"
    STOP_SEQUENCE = "stop_sequence"
    REFUSAL = "refusal"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Text:
    """Plain text written by the user, the model or a tool."""

    text: str
    """The text itself."""
    _: KW_ONLY
    provider_id: str | None = field(default=None, compare=False)
    """The provider's item id of the assistant message this text was (``msg_…``).

    Only the OpenAI Responses API uses it: a message item that followed a
    reasoning item must go back with its id when that reasoning item goes back
    (the API pairs the two by id). None for text from any other source; the
    other providers never send it. Not part of equality.
    """


@dataclass(frozen=True, slots=True)
class Thinking:
    """A reasoning block, kept verbatim so it can be sent back to the provider."""

    text: str
    """The reasoning text (empty for redacted thinking)."""
    signature: str | None = None
    """The provider's signature over the block; must be echoed back unchanged."""
    _: KW_ONLY
    redacted_data: str | None = None
    """Opaque data of a redacted thinking block (Anthropic), echoed back unchanged."""
    provider_id: str | None = None
    """The provider's id for this item (OpenAI Responses reasoning items)."""
    encrypted_content: str | None = None
    """Encrypted reasoning content (OpenAI Responses), echoed back unchanged."""


@dataclass(frozen=True, slots=True)
class Image:
    """An image, as base64 data with its media type."""

    data: str
    """Base64-encoded bytes."""
    media_type: str = "image/png"
    """The MIME type, such as ``image/png``."""


@dataclass(frozen=True, slots=True, init=False)
class ToolCall:
    """One tool_use block: the model asks for tool `name` with `input`.

    `id` is the provider's id, kept as the model wrote it. It is *not* a key of
    truth: models repeat ids (two calls with one id in a response; local servers
    send ``call_0`` in every response). A result answers the call at its
    position; inside toolweave a call is known by `key` (its iteration and
    position), and duplicate ids are repaired only on the way to a provider
    that requires unique ones (`toolweave.models.unique_call_ids`).
    """

    id: str
    """The tool_use id, as the provider sent it (an empty one is filled at the adapter)."""
    name: str
    """The tool name as the model wrote it (may be an alias or a hallucination)."""
    input: Mapping[str, Any]
    """The raw arguments, before validation."""
    _: KW_ONLY
    raw_arguments: str | None = None
    """Arguments as received when they were not valid JSON; the call then fails."""
    key: str = field(default="", compare=False)
    """toolweave's own identity of the call: ``"<iteration>.<position>"``, unique in its run.

    (``"<iteration>~<attempt>.<position>"`` for the calls of a restarted stream.)

    Set by the agent loop as the call arrives; results, large-result previews,
    events and the session store are keyed by it (the store adds the run). Empty
    for a call made outside the loop (then `ref` falls back to `id`). Not part
    of equality.
    """
    provider_id: str | None = field(default=None, compare=False)
    """The provider's item id of this call (``fc_…``), distinct from its call `id`.

    Only the OpenAI Responses API uses it: a ``function_call`` item that
    followed a reasoning item must go back with this id when that reasoning
    item goes back (the API pairs the two by id), and without it when the
    reasoning is left out. None for calls from any other provider, or when the
    server sent no item id; the other providers never send it, and the wire
    repair of call ids (`toolweave.models.unique_call_ids`) never touches it.
    Not part of equality.
    """

    def __init__(
        self,
        id: str,
        name: str,
        input: Mapping[str, Any],
        *,
        raw_arguments: str | None = None,
        key: str = "",
        provider_id: str | None = None,
    ) -> None:
        # The generated __init__, written out: one made per call (see slot_setter).
        _call_id(self, id)
        _call_name(self, name)
        _call_input(self, input)
        _call_raw_arguments(self, raw_arguments)
        _call_key(self, key)
        _call_provider_id(self, provider_id)

    @property
    def ref(self) -> str:
        """The key to index this call by: `key`, or `id` when no key was set."""
        return self.key or self.id


_call_id = slot_setter(ToolCall, "id")
_call_name = slot_setter(ToolCall, "name")
_call_input = slot_setter(ToolCall, "input")
_call_raw_arguments = slot_setter(ToolCall, "raw_arguments")
_call_key = slot_setter(ToolCall, "key")
_call_provider_id = slot_setter(ToolCall, "provider_id")

ContentBlock: TypeAlias = Text | Image
"""What a tool result or a user message may hold."""


@dataclass(frozen=True, slots=True, init=False)
class ToolResult:
    """The answer to one `ToolCall`: the call at the same position, carrying its id.

    A result the runtime wrote because the call never ran (or was cut short)
    is `synthetic`, and always `is_error`: never an empty success.
    """

    call_id: str
    """The id of the `ToolCall` this answers."""
    content: str | Sequence[ContentBlock]
    """What the model sees: text, or a sequence of text and image blocks (kept as a tuple)."""
    is_error: bool = False
    """True when the call failed; the model is told so."""
    synthetic: bool = False
    """True when the runtime wrote this result because the call did not run to the end."""
    _: KW_ONLY
    context_modifier: Any = field(default=None, compare=False, repr=False)
    """A zero-argument callable the tool returned to change shared context.

    The dispatcher applies it: right after the call on the sequential path, after
    the batch in call order on a concurrent one. Not part of the transcript.
    """

    def __init__(
        self,
        call_id: str,
        content: str | Sequence[ContentBlock],
        is_error: bool = False,
        synthetic: bool = False,
        *,
        context_modifier: Any = None,
    ) -> None:
        # The generated __init__ and a __post_init__, written out: one is made
        # per call (see slot_setter). A synthetic result is an error; content
        # is kept as a str or a tuple.
        if synthetic and not is_error:
            is_error = True
        if not isinstance(content, _STR_OR_TUPLE):
            content = tuple(content)
        _result_call_id(self, call_id)
        _result_content(self, content)
        _result_is_error(self, is_error)
        _result_synthetic(self, synthetic)
        _result_context_modifier(self, context_modifier)

    @property
    def text(self) -> str:
        """The text of the result, with image blocks shown as placeholders."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(
            b.text if isinstance(b, Text) else f"[image {b.media_type}]"
            for b in self.content
        )


_STR_OR_TUPLE = (str, tuple)
_result_call_id = slot_setter(ToolResult, "call_id")
_result_content = slot_setter(ToolResult, "content")
_result_is_error = slot_setter(ToolResult, "is_error")
_result_synthetic = slot_setter(ToolResult, "synthetic")
_result_context_modifier = slot_setter(ToolResult, "context_modifier")

AssistantBlock: TypeAlias = Text | Thinking | ToolCall
"""What an assistant message may hold."""

Role: TypeAlias = Literal["user", "assistant"]


@dataclass(frozen=True, slots=True)
class Message:
    """One turn of the conversation.

    A user message may hold text, images and tool results; an assistant message
    text, thinking blocks and tool calls.
    """

    role: Role
    """``"user"`` or ``"assistant"``."""
    content: str | Sequence[AssistantBlock | ContentBlock | ToolResult]
    """A plain string, or a sequence of blocks (kept as a tuple)."""

    def __post_init__(self) -> None:
        if not isinstance(self.content, str | tuple):
            object.__setattr__(self, "content", tuple(self.content))

    @property
    def blocks(self) -> tuple[AssistantBlock | ContentBlock | ToolResult, ...]:
        """The content as blocks (a plain string becomes one `Text`)."""
        if isinstance(self.content, str):
            return (Text(self.content),)
        return tuple(self.content)

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls in this message, in order."""
        return tuple(b for b in self.blocks if isinstance(b, ToolCall))

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        """The tool results in this message, in order."""
        return tuple(b for b in self.blocks if isinstance(b, ToolResult))

    @property
    def text(self) -> str:
        """The concatenated text blocks."""
        return "".join(b.text for b in self.blocks if isinstance(b, Text))


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one or more model calls. Adding two usages sums them."""

    input_tokens: int = 0
    """Uncached input tokens."""
    output_tokens: int = 0
    """Generated tokens (including reasoning)."""
    _: KW_ONLY
    cache_read_tokens: int = 0
    """Input tokens served from the prompt cache."""
    cache_write_tokens: int = 0
    """Input tokens written to the prompt cache."""
    requests: int = 0
    """How many model calls this covers."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            requests=self.requests + other.requests,
        )

    @property
    def total_tokens(self) -> int:
        """Every token counted, input (cached or not) and output."""
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """One complete model response."""

    content: Sequence[AssistantBlock]
    """Text, thinking and tool-call blocks in the order the model produced them."""
    stop_reason: StopReason = StopReason.END_TURN
    """Why generation stopped."""
    usage: Usage = field(default_factory=Usage)
    """Tokens this response cost."""
    _: KW_ONLY
    raw_stop_reason: str | None = None
    """The provider's own stop reason string (kept when it mapped to UNKNOWN)."""
    model: str | None = None
    """The model that actually answered (after any fallback)."""

    def __post_init__(self) -> None:
        if not isinstance(self.content, tuple):
            object.__setattr__(self, "content", tuple(self.content))

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls, in the order the model wrote them."""
        return tuple(b for b in self.content if isinstance(b, ToolCall))

    @property
    def text(self) -> str:
        """The concatenated text blocks."""
        return "".join(b.text for b in self.content if isinstance(b, Text))

    def to_message(self) -> Message:
        """The assistant message that records this response in the transcript."""
        return Message("assistant", tuple(self.content))
