"""Tool manifests: JSON/TOML files that declare tools run by a command or a Python function.

A manifest holds one tool, or ``{"tools": [...]}`` (``[[tools]]`` in TOML)::

    {
      "name": "file_writer",
      "description": "Write a file.",
      "executionMode": "sequential",
      "inputSchema": {"type": "object",
                      "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                      "required": ["path", "content"]},
      "command": ["python3", "./write.py", "--to", "{path}"],
      "access": {"writes": ["fs:{path}"]}
    }

Keys (camelCase; snake_case is accepted too): ``name``, ``description``,
``inputSchema`` (JSON schema; the input is validated against it), exactly one of
``command`` (argv template; the input goes to stdin as JSON, stdout is the
result, an exit status outside ``okExitCodes`` (default ``[0]``) is an error;
``cwd``, ``env``, ``maxOutputBytes`` apply) or ``entryPoint`` (``module:function``
or ``file.py:function``, called with the input as keyword arguments),
``executionMode`` (``"sequential"``, the default, or ``"parallel"``), ``access``
(``reads``/``writes`` key templates filled from the input), ``interrupt``
(``"block"``, the default, or ``"cancel"``), ``timeout`` and ``aliases``.

``executionMode`` becomes the tool's `Concurrency`, so every policy and the
streaming seam honour it: a sequential tool never overlaps another call under
``all_or_nothing``, ``partition`` and ``rwlock``, and never starts before the
response is final when streaming. Under ``conflict`` a sequential tool *with*
an ``access`` template waits for every call whose keys conflict with it (and
only those); without one it is a barrier there too.

A manifest is someone's claim about a tool, so a ``parallel`` tool starts
before the model's response is final only if you vouch for it
(``load_manifest(path, trusted=True)``), or if it is an ``entryPoint`` run under
``audit="enforce"``; otherwise it overlaps inside a final response only.
"""

from ._load import load_manifest as load_manifest
from ._load import load_manifests as load_manifests
from ._schema_tool import JSONSchemaTool as JSONSchemaTool
from ._tool import CommandRunner as CommandRunner
from ._tool import EntryPointRunner as EntryPointRunner
from ._tool import ManifestTool as ManifestTool

__all__ = [
    "CommandRunner",
    "EntryPointRunner",
    "JSONSchemaTool",
    "ManifestTool",
    "load_manifest",
    "load_manifests",
]
