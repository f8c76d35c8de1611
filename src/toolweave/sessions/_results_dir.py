"""Where a stored session's large tool results are saved: a folder beside the store."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

__all__ = ["results_dir_beside"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def results_dir_beside(store_path: Path, session_id: str) -> Path:
    """``<store file>.results/<session id>/`` (like the store's ``.blobs/`` sibling).

    One folder per session, so a resumed session finds the results its
    transcript points to, and two sessions never share files. An id with
    characters outside ``[A-Za-z0-9_.-]`` is made safe and given a short hash,
    so it can neither leave the folder nor collide with another id. Pure: the
    folder is created by the first write.
    """
    safe = _UNSAFE.sub("_", session_id).lstrip(".") or "_"
    if safe != session_id:
        safe = f"{safe}-{hashlib.sha256(session_id.encode()).hexdigest()[:8]}"
    return store_path.with_name(store_path.name + ".results") / safe
