"""Optional features: what to install when one's dependencies are missing.

Each optional feature lives behind a pip extra of the ``toolweave`` package (see
``pyproject.toml``). A module or function that needs one turns the bare
``ModuleNotFoundError: No module named 'agents'`` of the missing package into a
`MissingExtraError` that says which extra installs it.
"""

from __future__ import annotations

from ._exceptions import MissingExtraError

__all__ = ["missing_extra"]


def missing_extra(exc: ImportError, *, extra: str, needs: str) -> MissingExtraError:
    """The error for `exc`, raised while importing what the extra `extra` installs.

    Raise it ``from exc``. `needs` says who needs it and what, as in
    ``"toolweave.integrations.langgraph needs LangGraph"``. A package that is
    there but of another version (an ``ImportError`` naming a missing name)
    gets the same advice: the extra pins the version toolweave works with.
    """
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        why = f"the module {exc.name!r} is not installed"
    else:
        why = f"importing it failed: {exc}"
    return MissingExtraError(
        f"{needs}, and {why}: pip install 'toolweave[{extra}]'",
        extra=extra,
        module=exc.name,
    )
