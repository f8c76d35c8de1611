"""Large output is never silently cut (issue 13 item 8), through a default tw.Agent.

A bare Agent saves large results in a temporary directory it owns; the model
sees a preview and the saved file's path. `read` is exempt and pages instead.
"""

from __future__ import annotations

import gc
import re
from pathlib import Path

import pytest
from loop_support import call, say, use

import toolweave as tw
from toolweave.messages import ToolResult
from toolweave.models import ModelRequest, ScriptedModel
from toolweave.tools.builtin import coding_tools

pytestmark = pytest.mark.anyio

_SAVED = re.compile(r"Full output saved to: (\S+)")
_NEXT = re.compile(r"read with offset=(\d+) for more\]$")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Real clocks: `read` and the persistence write run on worker threads."""
    return str(request.param)


def _results(request: ModelRequest) -> list[ToolResult]:
    last = request.messages[-1]
    assert not isinstance(last.content, str)
    return [b for b in last.content if isinstance(b, ToolResult)]


def _read(path: Path) -> str:
    return path.read_text()


def _exists(path: Path) -> bool:
    return path.exists()


def _big_output() -> str:
    return "".join(f"row {i:06d} " + "z" * 40 + "\n" for i in range(3_000))  # ~150 KB


async def test_a_150kb_output_is_saved_and_the_model_gets_its_path() -> None:
    output = _big_output()
    assert len(output) >= 150_000

    @tw.tool
    def dump() -> str:
        """Print a lot."""
        return output

    seen: list[str] = []

    def check(request: ModelRequest) -> tw.ModelResponse:
        (result,) = _results(request)
        assert isinstance(result.content, str)
        seen.append(result.content)
        return say("done")

    agent = tw.Agent(ScriptedModel([use(call("c1", "dump")), check]), [dump])
    try:
        result = await agent.run("go")
        assert result.completion_reason is tw.CompletionReason.COMPLETED
        (text,) = seen
        assert len(text) < 5_000
        found = _SAVED.search(text)
        assert found is not None, text
        saved = Path(found.group(1))
        assert agent.results_dir is not None
        assert saved.is_relative_to(agent.results_dir)
        assert _read(saved) == output
        assert output[:100] in text  # the preview
    finally:
        await agent.aclose()
    assert not _exists(saved)
    assert not _exists(agent.results_dir)


async def test_a_configured_results_dir_is_used_and_kept(tmp_path: Path) -> None:
    @tw.tool
    def dump() -> str:
        """Print a lot."""
        return _big_output()

    config = tw.AgentConfig(results_dir=tmp_path / "kept")
    model = ScriptedModel([use(call("c1", "dump")), say("done")])
    agent = tw.Agent(model, [dump], config=config)
    await agent.run("go")
    await agent.aclose()
    assert agent.results_dir == tmp_path / "kept"
    (saved,) = (tmp_path / "kept" / "tool-results").iterdir()
    assert saved.read_text() == _big_output()


def test_a_forgotten_agent_takes_its_temporary_dir_with_it() -> None:
    agent = tw.Agent(ScriptedModel([]))
    path = agent.results_dir
    assert path is not None and path.is_dir()
    del agent
    gc.collect()
    assert not path.exists()


def test_a_given_state_keeps_its_own_results_dir(tmp_path: Path) -> None:
    state = tw.tools.SessionState(results_dir=tmp_path)
    agent = tw.Agent(ScriptedModel([]), state=state)
    assert agent.results_dir == tmp_path


async def test_a_1500_line_file_reaches_the_model_whole_across_pages(
    tmp_path: Path,
) -> None:
    """Each page ends with directions; following them yields every line once."""
    lines = [f"{i:04d} " + "q" * 60 for i in range(1, 1501)]  # ~98 KB
    (tmp_path / "big.txt").write_text("\n".join(lines) + "\n")
    received: list[str] = []

    def step(request: ModelRequest) -> tw.ModelResponse:
        (result,) = _results(request)
        assert isinstance(result.content, str) and not result.is_error
        assert "<persisted-output>" not in result.content
        assert "<truncated-output>" not in result.content
        received.append(result.content)
        found = _NEXT.search(result.content)
        if found is None:
            return say("read it all")
        offset = int(found.group(1))
        return use(call(f"r{len(received)}", "read", path="big.txt", offset=offset))

    model = ScriptedModel([use(call("r0", "read", path="big.txt")), *[step] * 10])
    agent = tw.Agent(model, coding_tools(tmp_path))
    try:
        result = await agent.run("read big.txt")
    finally:
        await agent.aclose()
    assert result.completion_reason is tw.CompletionReason.COMPLETED
    assert len(received) >= 2  # paged, not cut
    shown: list[str] = []
    for page in received:
        body = page.split("\n\n[showing lines")[0]
        shown.extend(line.split("\t", 1)[1] for line in body.splitlines())
    assert shown == lines


async def test_a_saved_result_can_be_read_back_with_read(tmp_path: Path) -> None:
    output = _big_output()

    @tw.tool
    def dump() -> str:
        """Print a lot."""
        return output

    pages: list[str] = []

    def read_saved(request: ModelRequest) -> tw.ModelResponse:
        (result,) = _results(request)
        assert isinstance(result.content, str)
        found = _SAVED.search(result.content)
        assert found is not None
        return use(call("r1", "read", path=found.group(1), limit=3))

    def check(request: ModelRequest) -> tw.ModelResponse:
        (result,) = _results(request)
        assert isinstance(result.content, str)
        pages.append(result.content)
        return say("ok")

    tools = [*coding_tools(tmp_path), dump]
    agent = tw.Agent(ScriptedModel([use(call("c1", "dump")), read_saved, check]), tools)
    try:
        await agent.run("go")
    finally:
        await agent.aclose()
    (page,) = pages
    assert page.startswith("     1\trow 000000 ")
    assert "offset=4" in page
