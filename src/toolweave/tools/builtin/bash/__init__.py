"""The bash tool: parsing a command, classifying it, and running it in the sandbox.

`classify_bash` reads a command's parse and proves it read-only or says it is
not; `BashTool` runs it (a read-only command in the read-only OS sandbox from
`..sandbox`), `command_parts` feeds ``bash(...)`` permission rules.
"""

from ._classifier import classify_bash as classify_bash
from ._classifier import parse_prefixes as parse_prefixes
from ._rules import CommandParts as CommandParts
from ._rules import ShellCommand as ShellCommand
from ._tool import BashTool as BashTool

__all__ = [
    "BashTool",
    "CommandParts",
    "ShellCommand",
    "classify_bash",
    "parse_prefixes",
]
