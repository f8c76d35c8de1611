"""The records with a hand-written ``__init__`` behave as the generated one would.

`ToolCall` and `ToolResult` are made on every tool call, so their ``__init__``
is written out (`toolweave._records.slot_setter`). Each is compared here with
a twin dataclass generated from the same fields (and, for `ToolResult`, the
``__post_init__`` it used to have): same signature, same field values for a
table of constructions, and the same generated behaviour (eq, hash, repr,
replace, pickling, frozenness).
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from typing import Any

import pytest

from toolweave.messages import Image, Text, ToolCall, ToolResult
from toolweave.tools import SessionState, ToolContext
from toolweave.tools._context import idempotency_key


def _modifier() -> None:
    return None


def _twin(cls: type, post_init: Any = None, defaults: Any = None) -> Any:
    """`cls`'s fields in a dataclass whose ``__init__`` dataclasses generate.

    `defaults` overrides a field's default where the written-out ``__init__``
    takes None for "derive it" (its `post_init` then does the deriving).
    """
    overrides = defaults or {}
    specs = [
        (
            f.name,
            f.type,
            dataclasses.field(
                default=overrides.get(f.name, f.default),
                default_factory=f.default_factory,
                init=f.init,
                repr=f.repr,
                hash=f.hash,
                compare=f.compare,
                metadata=f.metadata,
                kw_only=f.kw_only,
            ),
        )
        for f in dataclasses.fields(cls)
    ]
    namespace = {} if post_init is None else {"__post_init__": post_init}
    return dataclasses.make_dataclass(
        "Twin", specs, frozen=True, slots=True, namespace=namespace
    )


def _result_post_init(self: Any) -> None:  # ToolResult's former __post_init__
    if self.synthetic and not self.is_error:
        object.__setattr__(self, "is_error", True)
    if not isinstance(self.content, str | tuple):
        object.__setattr__(self, "content", tuple(self.content))


def _context_post_init(self: Any) -> None:  # the key derived from the call scope
    if self.idempotency_key is None:
        key = idempotency_key(self.state.call_scope, self.call)
        object.__setattr__(self, "idempotency_key", key)


def _values(obj: object) -> list[tuple[str, Any]]:
    return [(f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj)]  # type: ignore[arg-type]


CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    (("c1", "read", {"path": "a"}), {}),
    (("", "", {}), {"key": "0.3"}),
    (("c1", "x", {"a": 1}), {"raw_arguments": "{not json", "provider_id": "fc_1"}),
    (("c2", "y", {}), {"raw_arguments": None, "key": "", "provider_id": None}),
]

RESULTS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    (("c1", "text"), {}),
    (("c1", ""), {}),
    (("c1", "boom", True), {}),
    (("c1", "cut", False, True), {}),  # synthetic forces is_error
    (("c1", "cut", True, True), {}),
    (("c1", [Text("a"), Image("AA==")]), {}),  # a list is kept as a tuple
    (("c1", (Text("a"),)), {}),
    (("c1", "ITER"), {}),  # an iterator (made afresh for each side)
    (("c1", "x"), {"context_modifier": _modifier}),
    (("c1",), {"content": "kw", "is_error": False, "synthetic": True}),
]


_CALL = ToolCall("c1", "read", {})
_STATE = SessionState()
_SCOPED = SessionState()
_SCOPED.call_scope = "session-1/2"

CONTEXTS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((_CALL, _STATE), {}),
    ((_CALL, _STATE), {"progress": print}),
    ((_CALL,), {"state": _STATE}),
    ((_CALL, _STATE), {"idempotency_key": "driver/1/c1/1"}),  # given: kept
    ((_CALL, _SCOPED), {}),  # derived from the session's call scope
]
# Written-out defaults of None that mean "derive it" (the post_init derives).
_DERIVED: dict[type, dict[str, Any]] = {ToolContext: {"idempotency_key": None}}


@pytest.mark.parametrize(
    ("cls", "cases", "post_init"),
    [
        (ToolCall, CALLS, None),
        (ToolResult, RESULTS, _result_post_init),
        (ToolContext, CONTEXTS, _context_post_init),
    ],
    ids=["ToolCall", "ToolResult", "ToolContext"],
)
def test_the_written_out_init_sets_what_the_generated_one_does(
    cls: type, cases: list[tuple[tuple[Any, ...], dict[str, Any]]], post_init: Any
) -> None:
    twin = _twin(cls, post_init, _DERIVED.get(cls))
    mine = inspect.signature(cls).parameters
    generated = inspect.signature(twin).parameters
    # repr: a default factory shows as <factory> in both
    assert [(p.name, p.kind, repr(p.default)) for p in mine.values()] == [
        (p.name, p.kind, repr(p.default)) for p in generated.values()
    ]
    for args, kwargs in cases:

        def made(of: Any, args: tuple[Any, ...] = args) -> Any:
            fresh = [iter([Text("b")]) if a == "ITER" else a for a in args]
            return of(*fresh, **kwargs)

        ours, theirs = made(cls), made(twin)
        assert _values(ours) == _values(theirs), (args, kwargs)
        assert repr(ours).removeprefix(cls.__name__) == repr(theirs).removeprefix(
            "Twin"
        )


def test_a_context_without_state_gets_a_fresh_one_each_time() -> None:
    first, second = ToolContext(_CALL), ToolContext(_CALL)
    assert isinstance(first.state, SessionState)
    assert first.state is not second.state
    assert first.state is not _STATE
    assert ToolContext(_CALL, _STATE).state is _STATE
    assert repr(inspect.signature(ToolContext).parameters["state"].default) == (
        "<factory>"
    )


def test_a_missing_or_unknown_argument_fails_as_before() -> None:
    with pytest.raises(TypeError):
        ToolCall("c1", "read")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        ToolCall("c1", "read", {}, "raw")  # type: ignore[misc]
    with pytest.raises(TypeError):
        ToolResult("c1", "x", bogus=1)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "obj",
    [
        ToolCall("c1", "read", {"p": 1}, key="0.1", provider_id="fc"),
        ToolResult("c1", "out", True),
        ToolResult("c1", (Text("a"), Image("AA==")), synthetic=True),
        ToolContext(ToolCall("c1", "read", {}), SessionState()),
    ],
)
def test_generated_behaviour_is_unchanged(obj: Any) -> None:
    cls = type(obj)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(obj, cls.__slots__[0], "z")
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(obj, cls.__slots__[-1], None)
    assert not hasattr(obj, "__dict__")
    if cls is not ToolContext:  # its SessionState holds a lock: never picklable
        assert pickle.loads(pickle.dumps(obj)) == obj
        assert copy.deepcopy(obj) == obj
    assert copy.copy(obj) == obj
    replaced = dataclasses.replace(obj)
    assert replaced == obj
    assert _values(replaced) == _values(obj)
    assert [f.name for f in dataclasses.fields(obj)] == list(cls.__slots__)
    assert cls.__match_args__ == tuple(
        f.name for f in dataclasses.fields(obj) if not f.kw_only
    )


def test_equality_and_hash_ignore_the_fields_they_ignored() -> None:
    a = ToolCall("c1", "read", {}, key="0.1", provider_id="x")
    b = ToolCall("c1", "read", {}, key="0.2")
    assert a == b
    assert a != ToolCall("c1", "read", {}, raw_arguments="{")
    plain = ToolCall("c1", "read", ())  # type: ignore[arg-type]  # hashable input
    assert hash(plain) == hash(dataclasses.replace(plain, key="9"))
    r = ToolResult("c1", "x", context_modifier=_modifier)
    assert r == ToolResult("c1", "x")
    assert hash(r) == hash(ToolResult("c1", "x"))
    assert "context_modifier" not in repr(r)
    assert dataclasses.replace(r, synthetic=True).is_error
