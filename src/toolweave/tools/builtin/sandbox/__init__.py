"""The OS sandbox a shell command runs in: Landlock or bubblewrap, and plain spawning.

A sandbox is lower than the bash tool: it knows how to start a process confined
to a set of paths (`Sandbox`, `sandbox_backend`), what a refusal looks like in a
command's output (`refusal_note`), and nothing about shell syntax. The bash
package imports it; it never imports the bash package (an import-linter
contract holds that).
"""

from ._conservative import conservative_read_only as conservative_read_only
from ._git import protected_git_paths as protected_git_paths
from ._grants import Grant as Grant
from ._notes import refusal_note as refusal_note
from ._notes import restored_note as restored_note
from ._notes import unconfined_notice as unconfined_notice
from ._popen import SPAWN_STDIO as SPAWN_STDIO
from ._popen import PopenProcess as PopenProcess
from ._popen import ProcessLike as ProcessLike
from ._popen import Spawner as Spawner
from ._popen import spawn_popen as spawn_popen
from ._sandbox import Backend as Backend
from ._sandbox import Confinement as Confinement
from ._sandbox import Sandbox as Sandbox
from ._sandbox import sandbox_backend as sandbox_backend

__all__ = [
    "SPAWN_STDIO",
    "Backend",
    "Confinement",
    "Grant",
    "PopenProcess",
    "ProcessLike",
    "Sandbox",
    "Spawner",
    "conservative_read_only",
    "protected_git_paths",
    "refusal_note",
    "restored_note",
    "sandbox_backend",
    "spawn_popen",
    "unconfined_notice",
]
