"""`toolweave resume` keeps what the session had read (issue 13 item 9).

The read-before-edit guard refuses to change a file the session has not read,
or one that changed on disk since it was read. A resumed session is the same
session: an edit of a file read in an earlier run works, and a file changed
since that read is still refused.
"""

from __future__ import annotations

from pathlib import Path

from cli_support import final, script, tools
from typer.testing import CliRunner

from toolweave.cli import app
from toolweave.sessions import SQLiteSessionStore, read_state


def _invoke(*args: str) -> tuple[int, str]:
    # the edits under test run unasked; permissions are not what is tested here
    result = CliRunner().invoke(app, [*args, "--permission-mode", "accept_edits"])
    return result.exit_code, result.output


def _edit_result(store: SQLiteSessionStore, sid: str) -> tuple[str, bool]:
    (result,) = store.messages(sid)[-2].tool_results
    return result.text, result.is_error


def _read_then_resume_with_an_edit(
    tmp_path: Path, workspace: Path, *, change_between: bool
) -> tuple[SQLiteSessionStore, str]:
    (workspace / "notes.md").write_text("alpha\nbeta\n")
    db = str(tmp_path / "sessions.db")
    first = script(
        tmp_path / "read.json",
        tools(("r1", "read", {"path": "notes.md"})),
        final("Read it."),
    )
    code, output = _invoke("run", "look", "--scripted", str(first), "--store", db)
    assert code == 0, output
    store = SQLiteSessionStore(db)
    sid = store.list_sessions()[0].id
    (known,) = read_state(store, sid)
    assert known.path == str((workspace / "notes.md").resolve())
    if change_between:  # someone else changes the file between the runs
        (workspace / "notes.md").write_text("alpha\nbeta\ngamma, added elsewhere\n")
    edit = {"path": "notes.md", "old_string": "beta", "new_string": "BETA"}
    second = script(
        tmp_path / "edit.json", tools(("e1", "edit", edit)), final("Edited.")
    )
    code, output = _invoke(
        "resume", sid[:8], "now edit it", "--scripted", str(second), "--store", db
    )
    assert code == 0, output
    return store, sid


def test_an_edit_after_resume_of_a_file_read_before_works(
    tmp_path: Path, workspace: Path
) -> None:
    store, sid = _read_then_resume_with_an_edit(
        tmp_path, workspace, change_between=False
    )
    text, is_error = _edit_result(store, sid)
    assert not is_error, text
    assert (workspace / "notes.md").read_text() == "alpha\nBETA\n"
    # The edit is recorded too: the ledger now holds the file as written.
    (known,) = read_state(store, sid)
    assert known.size == len("alpha\nBETA\n")
    store.close()


def test_a_stale_read_is_still_refused_after_resume(
    tmp_path: Path, workspace: Path
) -> None:
    store, sid = _read_then_resume_with_an_edit(
        tmp_path, workspace, change_between=True
    )
    text, is_error = _edit_result(store, sid)
    assert is_error and "changed on disk since you last read it" in text
    assert (
        workspace / "notes.md"
    ).read_text() == "alpha\nbeta\ngamma, added elsewhere\n"
    store.close()


def test_without_the_restored_ledger_the_edit_would_be_refused(
    tmp_path: Path, workspace: Path
) -> None:
    """The control: a fresh session that never read the file is refused."""
    (workspace / "notes.md").write_text("alpha\nbeta\n")
    db = str(tmp_path / "sessions.db")
    edit = {"path": "notes.md", "old_string": "beta", "new_string": "BETA"}
    steps = script(tmp_path / "edit.json", tools(("e1", "edit", edit)), final("x"))
    code, output = _invoke("run", "edit", "--scripted", str(steps), "--store", db)
    assert code == 0, output
    store = SQLiteSessionStore(db)
    text, is_error = _edit_result(store, store.list_sessions()[0].id)
    assert is_error and "has not been read in this session" in text
    store.close()
