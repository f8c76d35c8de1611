"""Large tool results as content-addressed files next to the database."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
from pathlib import Path
from typing import final

from .._exceptions import StoreError

__all__ = ["BlobDirectory"]

_REF = re.compile(r"^[0-9a-f]{64}$")


@final
class BlobDirectory:
    """Stores strings as files named by their SHA-256, so equal contents share one file.

    A file is complete before its reference is returned (written to a temporary
    name, flushed, then renamed), so a row that names a blob never points at a
    half-written file; a write that fails (a full disk) removes its temporary
    file and leaves nothing at the blob's name. Reading checks the content
    against its name, so a blob damaged on disk is reported, never returned.
    Thread-safe: concurrent writers of one content race to rename identical bytes.
    """

    def __init__(self, root: Path, *, threshold: int) -> None:
        self.root = root
        """The directory holding the blobs."""
        self.threshold = threshold
        """Contents longer than this many characters are stored here."""

    def _path(self, ref: str) -> Path:
        if not _REF.match(ref):
            raise StoreError(f"malformed blob reference {ref!r}")
        return self.root / ref[:2] / f"{ref}.json"

    def put(self, data: str) -> str:
        """Store `data` (if not already there) and return its reference.

        Raises:
            StoreError: if the file cannot be written.
        """
        encoded = data.encode("utf-8")
        ref = hashlib.sha256(encoded).hexdigest()
        path = self._path(ref)
        try:
            if path.stat().st_size == len(encoded):
                return (
                    ref  # already stored (a damaged copy of another size is replaced)
                )
        except OSError:
            pass
        tmp: str | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".blob-")
            with os.fdopen(fd, "wb") as handle:
                handle.write(encoded)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
            tmp = None
        except OSError as exc:
            raise StoreError(f"cannot write blob {path}: {exc}") from exc
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        return ref

    def get(self, ref: str) -> str:
        """The data stored under `ref`.

        Raises:
            StoreError: if it is missing, unreadable, or not the content it is named by.
        """
        path = self._path(ref)
        try:
            encoded = path.read_bytes()
        except OSError as exc:
            raise StoreError(f"tool result blob {path} is missing: {exc}") from exc
        if hashlib.sha256(encoded).hexdigest() != ref:
            raise StoreError(
                f"tool result blob {path} is damaged: its content does not match its"
                f" name ({len(encoded):,} bytes)"
            )
        return encoded.decode("utf-8")
