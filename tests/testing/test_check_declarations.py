"""check_declarations, used the way a user's own test suite would use it."""

from __future__ import annotations

from pathlib import Path

import pytest

import toolweave as tw
from toolweave._exceptions import UsageError
from toolweave.testing import (
    assert_declarations_honest,
    check_declarations,
    check_declarations_async,
)


def make_tools(notes: Path) -> tuple[tw.tools.Tool, tw.tools.Tool]:
    """A user's two tools: one honest, one marked SAFE to get parallel calls."""

    @tw.tool(
        concurrency=tw.Concurrency.SEQUENTIAL,
        access=lambda args: tw.Access(writes=(f"fs:{notes}/{args['name']}",)),
    )
    def save_note(name: str, text: str) -> str:
        """Save a note."""
        (notes / name).write_text(text)
        return "saved"

    @tw.tool(concurrency=tw.Concurrency.SAFE, access=tw.Access(reads=(f"fs:{notes}",)))
    def read_note(name: str) -> str:
        """Read a note (and, wrongly, record that it was read)."""
        (notes / ".last-read").write_text(name)  # the undeclared write
        return (notes / name).read_text()

    return save_note, read_note


def test_a_wrong_safe_is_caught(tmp_path: Path) -> None:
    save_note, read_note = make_tools(tmp_path)
    (tmp_path / "a").write_text("hello")
    assert check_declarations(save_note, [{"name": "a", "text": "hi"}]) == []
    found = check_declarations(read_note, [{"name": "a"}, {"name": "a"}])
    assert [(v.tool, v.operation, v.target) for v in found] == [
        ("read_note", "open", f"{tmp_path.resolve()}/.last-read")
    ] * 2
    assert all(v.blocked for v in found)
    assert not (tmp_path / ".last-read").exists()  # enforce: it never happened
    with pytest.raises(AssertionError, match=r"read_note.*\n- open .*\.last-read at "):
        assert_declarations_honest(read_note, [{"name": "a"}])
    assert_declarations_honest(save_note, [{"name": "b", "text": "x"}], backend="trio")


def test_an_input_that_never_reaches_the_tool_is_an_error(tmp_path: Path) -> None:
    save_note, _ = make_tools(tmp_path)
    with pytest.raises(UsageError, match="input #0 never reached tool 'save_note'"):
        check_declarations(save_note, [{"name": "a"}])  # text is missing


@pytest.mark.anyio
async def test_inside_async_tests(tmp_path: Path) -> None:
    _, read_note = make_tools(tmp_path)
    (tmp_path / "a").write_text("hello")
    found = await check_declarations_async(read_note, [{"name": "a"}])
    assert [v.operation for v in found] == ["open"]


@pytest.mark.anyio
async def test_a_tool_that_needs_preparing_is_prepared() -> None:
    class Prepared(tw.tools.Tool):
        prepared = False

        @property
        def needs_prepare(self) -> bool:
            return True

        async def prepare(self) -> None:
            self.prepared = True

        async def call(self, args: dict[str, object], ctx: object) -> str:
            return "ok"

    from pydantic import BaseModel

    class NoInput(BaseModel):
        pass

    tool = Prepared(name="p", description="", input_model=NoInput)
    assert await check_declarations_async(tool, [{}]) == []
    assert tool.prepared
