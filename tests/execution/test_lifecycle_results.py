"""Output mapping, empty padding, large-result persistence, batch budgets, sticky replacement."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from lifecycle_helpers import call, dispatch, make_state, registry_with
from pydantic import BaseModel

from toolweave._exceptions import ConfigError
from toolweave.execution import ExecutionConfig, ToolOutput, ToolRunner, make_preview
from toolweave.messages import Image, Text, ToolResult
from toolweave.tools import Access, Concurrency, tool


class Point(BaseModel):
    x: int
    y: int


@dataclasses.dataclass
class Pair:
    a: str
    b: list[int]


@dataclasses.dataclass
class Doc:
    content: str


class Opaque:
    def __str__(self) -> str:
        return "<opaque thing>"


PNG = Image("iVBORw0KGgo=", "image/png")

MAPPING = [
    ("text", "hello", "hello", False),
    ("utf-8 bytes", "héllo".encode(), "héllo", False),
    ("invalid utf-8 bytes", b"ok \xff\xfe end", "ok \ufffd\ufffd end", False),
    ("bytearray", bytearray(b"abc"), "abc", False),
    ("dict", {"a": 1, "b": [True, None]}, '{"a":1,"b":[true,null]}', False),
    ("list of values", ["a", "b"], '["a","b"]', False),
    ("empty list", [], "[]", False),
    ("list mixing blocks and values", [Text("a"), 5], '[{"text":"a"},5]', False),
    ("an object with content but no error flag", Doc("x"), '{"content":"x"}', False),
    ("int", 42, "42", False),
    ("pydantic model", Point(x=1, y=2), '{"x":1,"y":2}', False),
    ("dataclass", Pair("q", [1]), '{"a":"q","b":[1]}', False),
    ("not JSON-able", Opaque(), "<opaque thing>", False),
    ("image", PNG, (PNG,), False),
    (
        "blocks",
        [Text("see"), PNG, "caption"],
        (Text("see"), PNG, Text("caption")),
        False,
    ),
    (
        "MCP-style blocks",
        [
            SimpleNamespace(type="text", text="t"),
            SimpleNamespace(type="image", data="QQ==", mimeType="image/gif"),
        ],
        (Text("t"), Image("QQ==", "image/gif")),
        False,
    ),
    (
        "MCP-style result",
        SimpleNamespace(
            content=[SimpleNamespace(type="text", text="denied")], isError=True
        ),
        (Text("denied"),),
        True,
    ),
    (
        "ToolResult",
        ToolResult("other", "remote failure", is_error=True),
        "remote failure",
        True,
    ),
    ("None", None, "(produce completed with no output)", False),
    ("empty string", "", "(produce completed with no output)", False),
    ("whitespace", " \n\t", "(produce completed with no output)", False),
    ("empty bytes", b"", "(produce completed with no output)", False),
    (
        "empty text blocks",
        [Text(""), Text("  ")],
        "(produce completed with no output)",
        False,
    ),
    ("ToolOutput", ToolOutput({"k": "v"}), '{"k":"v"}', False),
]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("output", "content", "is_error"),
    [m[1:] for m in MAPPING],
    ids=[m[0] for m in MAPPING],
)
async def test_output_mapping(
    output: Any, content: Any, is_error: bool, tmp_path: Path
) -> None:
    @tool
    async def produce() -> Any:
        """The produce test tool."""
        return output

    runner = ToolRunner(registry_with(produce), state=make_state(tmp_path))
    assert await runner(call("c", "produce")) == ToolResult("c", content, is_error)


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("short", 10, "short"),
        ("a" * 20, 10, "a" * 10),  # no newline: cut at the limit
        ("aaaaaa\nbbbbbbbbbb", 10, "aaaaaa"),  # newline at 60 %: cut there
        ("aa\nbbbbbbbbbbbbbb", 10, "aa\nbbbbbbb"),  # newline only below 50 %: hard cut
        ("aaaaa\nbbbbbbbbbb", 10, "aaaaa"),  # exactly 50 %
        ("aaaaaaaaaa\nbbbbb", 10, "aaaaaaaaaa"),  # exactly 100 %
        ("aaaaaa\nbb\ncccccccc", 10, "aaaaaa\nbb"),  # the last newline in range
    ],
)
def test_preview_is_cut_at_a_newline_between_half_and_all_of_it(
    text: str, limit: int, expected: str
) -> None:
    assert make_preview(text, limit) == expected


def _sized(**options: Any) -> Any:
    @tool(concurrency=Concurrency.SAFE, access=lambda a: Access(), **options)
    async def sized(lines: int, width: int = 9) -> str:
        """The sized test tool."""
        return "".join(f"{i:0{width}d}\n" for i in range(lines))

    return sized


@pytest.mark.anyio
async def test_threshold_is_the_smaller_of_tool_and_config(tmp_path: Path) -> None:
    config = ExecutionConfig(max_result_chars=1000, preview_chars=200)
    strict = ToolRunner(
        registry_with(_sized(max_result_chars=100)),
        state=make_state(tmp_path),
        config=config,
    )
    assert (await strict(call("a", "sized", lines=10))).text.count(
        "\n"
    ) == 10  # 100 chars
    persisted = await strict(call("b", "sized", lines=11))  # 110 chars
    assert persisted.text.startswith("<persisted-output>")

    loose = ToolRunner(
        registry_with(_sized()), state=make_state(tmp_path), config=config
    )
    assert not (await loose(call("c", "sized", lines=100))).text.startswith("<")
    assert (await loose(call("d", "sized", lines=101))).text.startswith("<persisted")

    never = ToolRunner(
        registry_with(_sized(max_result_chars=None)),
        state=make_state(tmp_path),
        config=config,
    )
    huge = await never(call("e", "sized", lines=20_000))
    assert len(huge.text) == 200_000 and never.replacement_for("e") is None


@pytest.mark.anyio
async def test_a_persisted_result_keeps_everything_on_disk(tmp_path: Path) -> None:
    state = make_state(tmp_path)
    config = ExecutionConfig(max_result_chars=1000, preview_chars=105)
    runner = ToolRunner(registry_with(_sized()), state=state, config=config)
    result = await runner(call("toolu_01", "sized", lines=500))
    path = tmp_path / "session" / "tool-results" / "toolu_01.txt"
    full = "".join(f"{i:09d}\n" for i in range(500))
    assert path.read_text() == full
    preview = "".join(f"{i:09d}\n" for i in range(10))[
        :-1
    ]  # 99 chars: cut at a newline
    assert result == ToolResult(
        "toolu_01",
        "<persisted-output>\nOutput too large (5,000 characters). Full output saved to:"
        f" {path}\n\nPreview (first 99 characters):\n{preview}\n...\n</persisted-output>",
    )
    assert runner.replacement_for("toolu_01") == result.text
    assert runner.replacements == {"toolu_01": result.text}
    assert runner.statistics().persisted == 1


@pytest.mark.anyio
async def test_an_odd_call_id_cannot_escape_the_results_directory(
    tmp_path: Path,
) -> None:
    config = ExecutionConfig(max_result_chars=10, preview_chars=5)
    runner = ToolRunner(
        registry_with(_sized()), state=make_state(tmp_path), config=config
    )
    await runner(call("../../evil", "sized", lines=5))
    results_dir = tmp_path / "session" / "tool-results"
    [saved] = results_dir.iterdir()
    assert saved.parent == results_dir
    assert saved.name.startswith("_.._evil-") and saved.suffix == ".txt"


@pytest.mark.anyio
async def test_images_are_never_persisted(tmp_path: Path) -> None:
    @tool(max_result_chars=10)
    async def picture() -> list[Any]:
        """The picture test tool."""
        return [Text("x" * 50), PNG]

    runner = ToolRunner(registry_with(picture), state=make_state(tmp_path))
    assert (await runner(call("p", "picture"))).content == (Text("x" * 50), PNG)


@pytest.mark.anyio
async def test_without_a_results_dir_or_when_saving_fails_the_preview_says_so(
    tmp_path: Path,
) -> None:
    config = ExecutionConfig(max_result_chars=100, preview_chars=20)
    nowhere = ToolRunner(
        registry_with(_sized()),
        state=dataclasses.replace(make_state(tmp_path), results_dir=None),
        config=config,
    )
    result = await nowhere(call("a", "sized", lines=50))
    assert not result.is_error
    assert "no results directory is configured" in result.text
    assert result.text.startswith(
        "<truncated-output>\nOutput too large (500 characters)"
    )

    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the directory should be")
    state = dataclasses.replace(make_state(tmp_path), results_dir=blocked)
    broken = ToolRunner(registry_with(_sized()), state=state, config=config)
    result = await broken(call("b", "sized", lines=50))
    assert not result.is_error
    assert "saving it to" in result.text and "failed" in result.text
    assert broken.replacement_for("b") == result.text  # still sticky


@pytest.mark.anyio
async def test_the_batch_budget_persists_the_largest_first(tmp_path: Path) -> None:
    config = ExecutionConfig(batch_result_chars=1800, preview_chars=100)
    registry = registry_with(_sized())
    runner = ToolRunner(registry, state=make_state(tmp_path), config=config)
    sizes = {
        "a": 30,
        "b": 80,
        "c": 60,
        "d": 80,
    }  # lines of 10 chars: 300 + 800 + 600 + 800
    calls = [call(i, "sized", lines=n) for i, n in sizes.items()]
    results = await dispatch(runner, registry, calls)
    replaced = [r.call_id for r in results if r.text.startswith("<persisted-output>")]
    # 2500 chars: "b" (800, first of the tie) then "d" (800) bring it under 1800.
    assert replaced == ["b", "d"]
    assert runner.replacement_for("b") == results[1].text
    assert sum(len(r.text) for r in results) <= 1800
    assert results[0].text.count("\n") == 30 and results[2].text.count("\n") == 60
    for r in results:
        if r.call_id in replaced:
            saved = tmp_path / "session" / "tool-results" / f"{r.call_id}.txt"
            assert len(saved.read_text()) == sizes[r.call_id] * 10


@pytest.mark.anyio
async def test_replacement_is_sticky(tmp_path: Path) -> None:
    config = ExecutionConfig(batch_result_chars=1000, preview_chars=100)
    registry = registry_with(_sized())
    runner = ToolRunner(registry, state=make_state(tmp_path), config=config)
    originals = [
        ToolResult("x", "".join(f"{i:09d}\n" for i in range(120))),
        ToolResult("y", "short"),
    ]
    first = runner.finish_batch(originals)
    assert first[0].text.startswith("<persisted-output>") and first[1] == originals[1]
    # Re-rendering history later, even a batch now under budget, shows the same text.
    again = runner.finish_batch(originals[:1])
    assert again == first[:1] == [ToolResult("x", runner.replacement_for("x") or "")]
    assert runner.finish_batch(first) == first
    assert runner.statistics().persisted == 1
    assert runner.replacement_for("y") is None


def test_a_batch_that_cannot_shrink_stays_as_it_is(tmp_path: Path) -> None:
    config = ExecutionConfig(batch_result_chars=10, preview_chars=100)
    runner = ToolRunner(registry_with(), state=make_state(tmp_path), config=config)
    results = [
        ToolResult("a", "x" * 50),  # shorter than a preview
        ToolResult("b", (Text("y" * 500), PNG)),  # holds an image
        ToolResult("c", "z" * 150),  # its replacement would be longer
    ]
    assert runner.finish_batch(results) == results
    assert runner.statistics().persisted == 0


@pytest.mark.anyio
async def test_a_context_modifier_reaches_the_dispatcher(tmp_path: Path) -> None:
    applied: list[str] = []

    @tool(concurrency=Concurrency.SAFE, access=lambda a: Access())
    async def enable(name: str) -> ToolOutput:
        """The enable test tool."""
        return ToolOutput(
            f"enabled {name}", context_modifier=lambda: applied.append(name)
        )

    registry = registry_with(enable)
    runner = ToolRunner(registry, state=make_state(tmp_path))
    results = await dispatch(
        runner, registry, [call("1", "enable", name="a"), call("2", "enable", name="b")]
    )
    assert [r.text for r in results] == ["enabled a", "enabled b"]
    # applied as each finished (overlapping calls: completion order)
    assert sorted(applied) == ["a", "b"]


@pytest.mark.parametrize(
    "options",
    [
        {"default_timeout": 0},
        {"default_timeout": -1.0},
        {"default_timeout": float("nan")},
        {"max_result_chars": 0},
        {"batch_result_chars": 0},
        {"preview_chars": 0},
        {"max_result_chars": 100, "preview_chars": 200},
    ],
)
def test_bad_config_is_refused(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        ExecutionConfig(**options)


@pytest.mark.anyio
async def test_the_batch_budget_never_persists_a_tool_exempt_from_persistence(
    tmp_path: Path,
) -> None:
    """Issue 13 item 8: `read` (max_result_chars=None) pages instead; the batch budget skips it."""

    @tool(concurrency=Concurrency.SAFE, access=Access(), max_result_chars=None)
    async def pager(lines: int) -> str:
        """The pager test tool."""
        return "".join(f"{i:09d}\n" for i in range(lines))

    config = ExecutionConfig(batch_result_chars=1000, preview_chars=100)
    registry = registry_with(_sized(), pager)
    runner = ToolRunner(registry, state=make_state(tmp_path), config=config)
    calls = [
        call("p1", "pager", lines=80),
        call("s1", "sized", lines=50),
        call("p2", "pager", lines=90),
    ]
    results = [await runner(c) for c in calls]
    out = runner.finish_batch(results, calls)
    assert [r.text.startswith("<persisted-output>") for r in out] == [
        False,
        True,
        False,
    ]
    assert out[0] == results[0] and out[2] == results[2]
    # with only exempt results over budget, the batch stays over it, whole
    only = [call("p3", "pager", lines=200)]
    (whole,) = runner.finish_batch([await runner(only[0])], only)
    assert whole.text.count("\n") == 200
