"""The frameworks' own suites under tests/integrations/upstream/ are kept honestly.

Each suite runs in a process of its own (``.ci/upstream``); this checks, in the
main run, what those runs take on trust: every listed difference or skew names
a reason and a docs anchor that exists, every suite keeps its licence and names
its source, and the harness turns the list into the right expectations.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = ROOT / "tests" / "integrations" / "upstream"
SUITES = sorted(p.parent for p in UPSTREAM.glob("*/pytest.ini"))

sys.path.insert(0, str(UPSTREAM))
from upstream_harness import VARIANTS, load_differences  # noqa: E402


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(doc: Path) -> set[str]:
    return {
        _slug(line.lstrip("#"))
        for line in doc.read_text(encoding="utf-8").splitlines()
        if line.startswith("#")
    }


def test_the_three_suites_are_there() -> None:
    assert [p.name for p in SUITES] == ["langgraph", "openai_agents", "pydantic_ai"]


@pytest.mark.parametrize("suite", SUITES, ids=lambda p: p.name)
def test_suite_keeps_its_licence_and_names_its_source(suite: Path) -> None:
    assert "MIT License" in (suite / "LICENSE").read_text(encoding="utf-8")
    source = (suite / "SOURCE.md").read_text(encoding="utf-8")
    assert "unmodified" in source
    assert re.search(r"sha256 `[0-9a-f]{64}`|commit\s+`[0-9a-f]{40}`", source)
    assert (suite / "tests" / "conftest.py").exists()


@pytest.mark.parametrize("suite", SUITES, ids=lambda p: p.name)
@pytest.mark.parametrize("kind", ["difference", "skew"])
def test_every_entry_has_a_reason_and_a_docs_anchor_that_exists(
    suite: Path, kind: str
) -> None:
    entries = load_differences(suite / "differences.toml", kind)
    for test, entry in entries.items():
        assert test.startswith("tests/test_") and ".py::" in test, test
        assert len(entry.reason) > 20, test
        assert set(entry.variants) <= set(VARIANTS), test
        if kind == "difference":
            assert "framework" not in entry.variants, test
        else:
            assert set(entry.variants) == set(VARIANTS), test
        path, _, anchor = entry.docs.partition("#")
        doc = ROOT / path
        assert doc.is_file(), f"{test}: {path}"
        assert anchor in _anchors(doc), f"{test}: no heading #{anchor} in {path}"
        assert (suite / test.split("::", 1)[0]).is_file(), test


def test_a_test_listed_twice_is_refused(tmp_path: Path) -> None:
    listed = '[[difference]]\ntest = "tests/test_a.py::t"\nreason = "r"\ndocs = "d"\n'
    (tmp_path / "differences.toml").write_text(listed * 2, encoding="utf-8")
    with pytest.raises(ValueError, match="listed twice"):
        load_differences(tmp_path / "differences.toml")


def test_an_unknown_variant_is_refused(tmp_path: Path) -> None:
    (tmp_path / "differences.toml").write_text(
        '[[difference]]\ntest = "tests/test_a.py::t"\nreason = "r"\ndocs = "d"\n'
        'variants = ["toolweave-fast"]\n',
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match="unknown variants"):
        load_differences(tmp_path / "differences.toml")


def test_a_skew_is_expected_in_every_run(tmp_path: Path) -> None:
    (tmp_path / "differences.toml").write_text(
        '[[skew]]\ntest = "tests/test_a.py::t"\nreason = "r"\ndocs = "d"\n',
        encoding="utf-8",
    )
    [entry] = load_differences(tmp_path / "differences.toml", "skew").values()
    assert entry.variants == VARIANTS
    assert load_differences(tmp_path / "differences.toml") == {}
