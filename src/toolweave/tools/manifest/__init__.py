"""Tool manifests: JSON/TOML files that declare tools run by a command or a Python function."""

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
