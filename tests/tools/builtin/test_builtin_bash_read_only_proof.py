"""Issue 28 item 2: each newly read-only command is proved read-only under real bash first.

Every row of `PURE` runs under the real ``bash -c`` in a scratch workspace (a
git repository with a file, a subdirectory and two branches) with a scratch
``HOME``, and nothing in either tree may change (kind, mode, size, mtime and
content of every entry, links unfollowed). Only then does the classifier's
verdict for it count. The ``--help`` rows come from the allow-list itself
(`_HELP_SAFE`), so a program added there without proof fails here.

``npm view`` writes a cache and a log under ``HOME`` (``~/.npm/_cacache``,
``~/.npm/_logs``) on every run, and under the read-only sandbox that refused
write makes it fail (EACCES): it stays refused, and the row that shows the
write talks to a loopback registry speaking npm's wire format (a packument over
HTTP), so it needs no internet.

`PARSE_ONLY` programs are not installed here (``gh``): they are classified by
parse and the classification is tested, nothing more; docs/bash-safety.md says
so. `REFUSED` rows stay not read-only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from builtin_support import run

from toolweave.tools import Concurrency, SessionState
from toolweave.tools.builtin import BashTool
from toolweave.tools.builtin.bash._classifier import is_read_only
from toolweave.tools.builtin.bash._commands import _HELP_SAFE
from toolweave.tools.builtin.sandbox._sandbox import Backend, backend_available

pytestmark = pytest.mark.timeout(120)

PURE = [
    "git branch --contains HEAD",
    "git branch --merged main",
    "git branch --no-merged main",
    "git branch --points-at HEAD",
    "git branch --merged=main --sort=-committerdate",
    "git log --help",
    "git status --help",
    "bash -c 'ls -la'",
    "sh -c 'cat a.txt | wc -l'",
    "bash -lc 'git branch --show-current'",
    "bash -ec 'ls; cat a.txt'",
    "bash -c \"bash -c 'ls sub'\"",
    "env ls",
    "env cat a.txt",
    "env git log --oneline -1",
    "find ~ -name a.txt",
    "find ~/notes -type f",
    "ls ~/",
    "cat a.txt | wc -l &",
    "grep -r hello . &",
    "ls sub & cat a.txt",
    *(f"{name} --help" for name in sorted(_HELP_SAFE) if shutil.which(name)),
]
"""Newly read-only, and proved so here under real bash (issue 28 item 2)."""

PARSE_ONLY = [
    "gh pr view 167",
    "gh pr view 167 --comments",
    "gh issue view 12 --json title,body",
    "gh repo view --json name,description",
    "gh repo view owner/name -b main",
    "gh release view v1.0 -R owner/name",
    "gh pr view 3 --jq .title --json title",
    # issue 28 replay: the reading subcommands the real batches use
    "gh pr diff 167",
    "gh pr diff 104 --name-only -R owner/name",
    "gh pr checks 10876 --watch=false",
    "gh pr checks 12 --required --json name,state",
    "gh pr list --head x/y --json number --jq '.[0].number'",
    "gh pr list -s merged -L 5",
    "gh pr status --json currentBranch --jq .",
    "gh issue list --label bug --limit 20",
    "gh issue status",
    "gh release list --limit 20",
    "gh run list -w ci.yml -L 5",
    "gh run view 28556353731 --json status,conclusion,jobs",
    "gh run view 285 --job 846 --exit-status",
    "gh auth status",
    "gh api repos/x/y",
    "gh api repos/jdx/mise/pulls/10704/comments --paginate",
    "gh api repos/x/y/issues --jq '.[].title' --paginate --slurp",
    "gh api -X GET repos/x/y",
    "gh api --method GET repos/x/y",
    "gh api --method=GET repos/x/y -i",
]
"""Read-only by parse: they read the network (GitHub's API) and gh's config,
never write the workspace; gh is not installed here, so this is the parse only."""

REFUSED = [
    "gh pr view 1 --web",
    "gh pr view -w 1",
    "gh pr create",
    "gh pr checkout 1",
    "gh repo clone x/y",
    "gh api -X POST repos/x/y/issues",
    "gh api --method PATCH repos/x/y",
    "gh api --method=DELETE repos/x/y",
    "gh api -XPOST repos/x/y",
    "gh api repos/x/y/issues -f title=t",  # a field makes it a POST
    "gh api repos/x/y/issues -F title=t",
    "gh api repos/x/y/issues --raw-field title=t",
    "gh api repos/x/y/issues --input body.json",
    "gh api -X GET repos/x/y -f q=1",
    "gh api -H 'X-HTTP-Method-Override: DELETE' repos/x/y",
    "gh api repos/x/y --cache 1h",  # writes a cache
    "gh api graphql -f query='mutation { x }'",
    "gh api graphql",
    "gh api",
    "gh api a b",
    "gh api $X",
    "gh pr diff 1 --web",
    "gh pr checks 1 --watch",
    "gh pr checks 1 --watch=true",
    "gh pr list --web",
    "gh pr list -w",
    "gh issue list -w",
    "gh run view 1 --log",  # caches the log under gh's cache folder
    "gh run view 1 --log-failed",
    "gh run view 1 --web",
    "gh run view 1 -w",
    "gh run watch 1",
    "gh run rerun 1",
    "gh run download 1",
    "gh auth status --show-token",
    "gh auth token",
    "gh auth login",
    "gh pr status extra",
    "gh pr merge 1",
    "gh issue close 1",
    "gh release download v1",
    "npm view left-pad version",  # see test_npm_view_writes_home_when_unconfined
    "npm info left-pad --json",
    "npm list",
    "npm outdated",
    "npm install left-pad",
    "npm --help",
    "npm view x --cache /tmp/c",
    "./script --help",
    "make --help extra",
    "pytest --help",
    "bash x.sh",
    'bash -c "$X"',
    "bash -c 'rm a.txt'",
    "bash -c 'ls > out'",
    "bash -c 'git diff'",  # its git would get no --no-textconv
    "bash -lc 'git log -1'",
    "sh -c 'ls' argv0",
    "bash -o errexit -c ls",
    "bash --rcfile x -c ls",
    "bash -ic ls",
    "env FOO=1 ls",
    "env -i ls",
    "env -S 'rm a.txt'",
    "env GIT_EXTERNAL_DIFF=x git diff",
    "rm a.txt &",
    "ls & rm a.txt",
    "find ~ -delete",
    "find ~user -name x",
    "tree ~ -o out",
    "git branch newname",
    "git branch -D main",
    "git branch --merged main -d side",
    "git branch -m old new",
]
"""Still not read-only: each writes, runs a program, or cannot be known."""


def _snapshot(top: Path) -> dict[str, tuple[int, int, int, bytes | str]]:
    """Every entry under `top`: mode, size, mtime and content or link target."""
    found: dict[str, tuple[int, int, int, bytes | str]] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            st = path.lstat()
            data: bytes | str = b""
            if path.is_symlink():
                data = os.readlink(path)
            elif path.is_file():
                data = path.read_bytes()
            mtime = 0 if path.is_dir() else st.st_mtime_ns
            found[str(path.relative_to(top))] = (st.st_mode, st.st_size, mtime, data)
    return found


@pytest.fixture
def scratch(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace (git repository, branches main and side) and a HOME."""
    ws, home = tmp_path / "ws", tmp_path / "home"
    (ws / "sub").mkdir(parents=True)
    (home / "notes").mkdir(parents=True)
    (ws / "a.txt").write_text("hello\n")
    (ws / "sub" / "b.txt").write_text("b\n")
    (home / "notes" / "n.txt").write_text("note\n")
    env = _env(home)
    for argv in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "add", "-A"],
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"],
        ["git", "branch", "side"],
    ):
        subprocess.run(argv, cwd=ws, env=env, check=True, timeout=30)
    return ws.resolve(), home.resolve()


def _env(home: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8"}


def _real_bash(command: str, ws: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command],
        cwd=ws,
        env=_env(home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("command", PURE)
def test_pure_rows_write_nothing_under_real_bash_and_are_read_only(
    command: str, scratch: tuple[Path, Path]
) -> None:
    ws, home = scratch
    before_ws, before_home = _snapshot(ws), _snapshot(home)
    _real_bash(command, ws, home)
    assert _snapshot(ws) == before_ws, f"{command!r} changed the workspace"
    assert _snapshot(home) == before_home, f"{command!r} changed HOME"
    assert is_read_only(command), command


def test_the_pure_rows_run_real_programs() -> None:
    """The proof is not vacuous: the --help rows found their programs."""
    assert sum(row.endswith(" --help") for row in PURE) >= 20


@pytest.mark.parametrize("command", PARSE_ONLY)
def test_network_readers_are_read_only_by_parse(command: str) -> None:
    assert is_read_only(command), command
    assert not is_read_only(command, conservative=True), command


@pytest.mark.parametrize("command", REFUSED)
def test_refused_rows_stay_refused(command: str) -> None:
    assert not is_read_only(command), command


class _Registry(BaseHTTPRequestHandler):
    """npm's registry wire format, one package: GET /<name> answers its packument."""

    def do_GET(self) -> None:
        name = self.path.strip("/")
        body = json.dumps(
            {
                "name": name,
                "dist-tags": {"latest": "1.2.3"},
                "versions": {
                    "1.2.3": {
                        "name": name,
                        "version": "1.2.3",
                        "dist": {
                            "tarball": f"http://x/{name}-1.2.3.tgz",
                            "shasum": "0",
                        },
                    }
                },
                "time": {"1.2.3": "2026-01-01T00:00:00.000Z"},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def registry() -> Iterator[str]:
    """A loopback npm registry's URL, stopped after the test."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


npm_needed = pytest.mark.skipif(shutil.which("npm") is None, reason="npm not installed")


@npm_needed
def test_npm_view_writes_home_when_unconfined(
    scratch: tuple[Path, Path], registry: str
) -> None:
    """Why npm view stays refused: unconfined it writes ~/.npm (its cache and a log),
    and under the read-only sandbox that refused write fails the command
    (EACCES on ~/.npm), so it cannot run read-only and still answer."""
    ws, home = scratch
    before_ws = _snapshot(ws)
    done = _real_bash(f"npm view probe-pkg version --registry {registry}", ws, home)
    assert done.stdout.strip() == "1.2.3", done
    assert _snapshot(ws) == before_ws
    assert (home / ".npm").exists()  # its cache and log: a write outside the workspace


@pytest.fixture(params=["landlock", "bwrap"])
def backend(request: pytest.FixtureRequest) -> Backend:
    """Each sandbox backend this machine can run."""
    name: Backend = request.param
    if not backend_available(name):
        pytest.skip(f"{name} is not available here")
    return name


THROUGH_THE_TOOL = [
    "bash -c 'cat a.txt; ls sub'",
    "env cat a.txt",
    "find ~/notes -type f -name '*.txt'",
    "git branch --merged main",
    "sed --help | head -1",
]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("command", THROUGH_THE_TOOL)
async def test_lifted_commands_run_read_only_through_the_tool_as_under_bash(
    command: str, scratch: tuple[Path, Path], backend: Backend
) -> None:
    """The lifted forms run in the read-only sandbox and answer what bash answers."""
    ws, home = scratch
    expected = _real_bash(command, ws, home)
    assert expected.returncode == 0, expected
    before_ws, before_home = _snapshot(ws), _snapshot(home)
    tool = BashTool(ws, env={"HOME": str(home)}, sandbox_backend=backend)
    state = SessionState(workspace=ws)
    assert tool.concurrency_for(tool.parse({"command": command})) is Concurrency.SAFE
    out = await run(tool, {"command": command}, state)
    assert out == expected.stdout + expected.stderr
    assert (_snapshot(ws), _snapshot(home)) == (before_ws, before_home)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize(
    "command", ["cat a.txt &", "ls sub & cat a.txt", "grep -r x . &"]
)
async def test_a_background_read_runs_read_only_and_writes_nothing(
    command: str, scratch: tuple[Path, Path], backend: Backend
) -> None:
    """SAFE and confined read-only. Its output is not compared with bash's: the
    job is killed with the call's session when the shell exits (as before this
    change, when it ran as a barrier), so what it printed by then is a race in
    the command itself, the same serial or parallel."""
    ws, home = scratch
    before_ws, before_home = _snapshot(ws), _snapshot(home)
    tool = BashTool(ws, env={"HOME": str(home)}, sandbox_backend=backend)
    state = SessionState(workspace=ws)
    assert tool.concurrency_for(tool.parse({"command": command})) is Concurrency.SAFE
    await run(tool, {"command": command}, state)
    assert (_snapshot(ws), _snapshot(home)) == (before_ws, before_home)
