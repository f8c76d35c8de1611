"""Helpers for users' own test suites.

`check_declarations` runs a tool under the declaration audit in enforce mode,
so a wrong ``concurrency=SAFE`` or a missing `Access` key fails the user's CI
instead of their production run.
"""

from ._declarations import assert_declarations_honest as assert_declarations_honest
from ._declarations import check_declarations as check_declarations
from ._declarations import check_declarations_async as check_declarations_async

__all__ = [
    "assert_declarations_honest",
    "check_declarations",
    "check_declarations_async",
]
