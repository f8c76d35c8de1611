"""Rule wildcards match in linear time, exactly as the regexes they replace.

Commands (``Bash(git * --force *)``) and paths (``Edit(src/**/*.py)``) alike.

The subject is a command the model wrote, so it is adversarial input: with a
regex (``.*`` per star) a rule with a few stars backtracks polynomially on a
long command that almost matches (``*a*a*a*b`` on 16 k characters: minutes,
with the event loop blocked).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolweave.execution._rules import glob_fullmatch, wildcard_fullmatch

ALPHABET = "ab*\n "


def _by_regex(spec: str, subject: str) -> bool:
    regex = ".*".join(re.escape(part) for part in spec.split("*"))
    return re.fullmatch(regex, subject, re.DOTALL) is not None


@settings(max_examples=3000, deadline=None)
@given(
    spec=st.text(alphabet=ALPHABET, max_size=8).filter(lambda s: "*" in s),
    subject=st.text(alphabet="ab\n ", max_size=12),
)
def test_it_agrees_with_the_regex_on_every_example(spec: str, subject: str) -> None:
    assert wildcard_fullmatch(spec, subject) == _by_regex(spec, subject)


@pytest.mark.parametrize(
    ("spec", "subject", "expected"),
    [
        ("*", "", True),
        ("git *", "git", False),
        ("git *", "git ", True),
        ("ab*ba", "aba", False),  # prefix and suffix may not overlap
        ("ab*ba", "abba", True),
        ("* --force *", "git push --force origin", True),
        ("* --force *", "git push --force", False),
        ("a**b", "ab", True),
        ("x*\n*y", "x1\n2y", True),  # a star spans newlines (the regex had DOTALL)
    ],
)
def test_edges(spec: str, subject: str, expected: bool) -> None:
    assert wildcard_fullmatch(spec, subject) is expected
    assert _by_regex(spec, subject) is expected


@pytest.mark.timeout(20)
def test_an_almost_matching_long_command_is_answered_at_once() -> None:
    """Hours for the regex; the linear scan answers in about a millisecond."""
    subject = "a" * 200_000
    assert not wildcard_fullmatch("*a*a*a*a*a*b", subject)
    assert wildcard_fullmatch("*a*a*a*a*a*", subject)


def _glob_by_regex(pattern: str, path: str) -> bool:
    """The translation the path rules used before (a backtracking regex)."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            char = pattern[i]
            out.append(
                "[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char)
            )
            i += 1
    return re.fullmatch("".join(out), path, re.DOTALL) is not None


@settings(max_examples=4000, deadline=None)
@given(
    pattern=st.text(alphabet="ab/*?", max_size=9),
    path=st.text(alphabet="ab/", max_size=12),
)
def test_path_globs_agree_with_the_regex_on_every_example(
    pattern: str, path: str
) -> None:
    assert glob_fullmatch(pattern, path) == _glob_by_regex(pattern, path)


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("/w/**/*.py", "/w/a.py", True),
        ("/w/**/*.py", "/w/src/pkg/a.py", True),
        ("/w/**/*.py", "/w/src/a.pyc", False),
        ("/w/*.py", "/w/src/a.py", False),  # * stays within one directory
        ("/w/**", "/w/src/a", True),
        ("/w/src/**/", "/w/src/x/", True),
        ("/w/?.env", "/w/a.env", True),
        ("/w/?.env", "/w//.env", False),  # ? is no slash
        ("/w/**/secret*", "/w/a/b/secret.txt", True),
    ],
)
def test_path_glob_edges(pattern: str, path: str, expected: bool) -> None:
    assert glob_fullmatch(pattern, path) is expected
    assert _glob_by_regex(pattern, path) is expected


@pytest.mark.timeout(20)
def test_a_long_near_miss_path_is_answered_at_once() -> None:
    """Hours for the regex at this length; linear here."""
    path = "/w/" + "a" * 50_000
    assert not glob_fullmatch("/w/**/*a*a*a*b", path)
    assert glob_fullmatch("/w/**/*a*a*a*", path)
