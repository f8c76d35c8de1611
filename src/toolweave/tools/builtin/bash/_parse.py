"""Bounded shell parsing: every simple command of a bash input, and what else it does.

Parser choice, by measurement (the numbers are in ``docs/bash-safety.md``):
**tree-sitter-bash**, not bashlex.

- bashlex is a recursive pure-Python port of bash's tokenizer; it loops forever
  on some quoted ``${`` glued to other text (issue 11), recurses once per
  nesting level (10,000-deep ``$(`` or ``(`` raises RecursionError), and cannot
  be interrupted: a thread running it can never be stopped.
- tree-sitter parses in C, keeps its own stack (10,000-deep nesting parses in
  ~5 ms), and can be *cancelled*: the parse below reads its input through a
  callback and passes a progress callback that aborts after `PARSE_DEADLINE`
  seconds. It is linear on nearly everything; the worst case found (thousands
  of stacked heredocs, quadratic) is exactly what the deadline cuts off. So a
  parse is bounded by `PARSE_DEADLINE` plus a walk over at most
  `MAX_COMMAND_BYTES` of input. The bash tool's `warm_declarations` runs it on a
  worker thread before the gate asks (the gate then hits the cache); the bound
  means that worker always comes back, and that the gate's own fallback parse
  on the loop cannot freeze the process. No thread is ever left behind.
- tree-sitter is error tolerant, which could fail open. It doesn't here: a tree
  with any ERROR or MISSING node is `Unparsed`, every node type not listed in
  this module is a hazard, word values are computed from the source text by a
  strict unquoter of our own (not from tree-sitter's word split), and the
  shapes where tree-sitter and bash disagree (found by a differential test
  against bash: backslash-newlines that join text, carriage returns, backticks
  in heredoc bodies, words glued to a newline, words hung on a redirection) are
  `Unparsed`.

`parse_script` returns a `Script` — every simple command anywhere (lists,
pipelines, subshells, blocks, command and process substitutions, heredoc
bodies, conditions and loop bodies), each word's literal value or None when it
depends on an expansion, and the *hazards*: constructs that make the input not
read-only whatever its commands are (assignments, arithmetic, subscripts,
output redirection to files, functions, unsupported syntax; a background job
is not one: it is killed with the call's session when the shell exits).
Results are cached, so the several synchronous callers of one call parse once.
"""

from __future__ import annotations

import functools
import re
import shlex
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._conditions import condition_evaluates, test_tokens

if TYPE_CHECKING:  # loaded on the first parse: `import toolweave` stays light
    import tree_sitter

__all__ = [
    "MAX_COMMAND_BYTES",
    "PARSE_DEADLINE",
    "Script",
    "SimpleCommand",
    "Unparsed",
    "literal_word",
    "parse_script",
]

MAX_COMMAND_BYTES = 64 * 1024
"""Longer input is not parsed (it is `Unparsed`: exclusive, and no allow rule)."""

PARSE_DEADLINE = 0.1
"""Seconds tree-sitter may spend on one input before the parse is cancelled."""

TOTAL_DEADLINE = 0.15
"""Seconds parse and walk together may take; past it the input is `Unparsed`."""

MAX_NODES = 50_000
"""Syntax nodes the walk visits at most; more is `Unparsed` (too complex)."""


@functools.cache
def _language() -> tree_sitter.Language:
    """The bash grammar, loaded once, on the first parse (not at import)."""
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Language(tree_sitter_bash.language())


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One simple command: its words, each literal or unknown."""

    words: tuple[str | None, ...]
    """Each word's value after quote removal; None if it depends on an expansion."""
    raw: tuple[str, ...]
    """Each word as written."""
    spans: tuple[tuple[int, int], ...]
    """Each word's (start, end) byte offsets in the UTF-8 source."""

    @property
    def name(self) -> str | None:
        """The literal command name, or None."""
        return self.words[0] if self.words else None


@dataclass(frozen=True, slots=True)
class Script:
    """A fully parsed input."""

    commands: tuple[SimpleCommand, ...]
    """Every simple command anywhere in the input, in source order."""
    hazards: tuple[str, ...]
    """Why the input cannot be read-only whatever its commands (empty: none)."""
    last: SimpleCommand | None
    """The command whose status is the input's status, if it is a simple one."""
    opaque: bool = False
    """True if bash may run commands the tree does not show. ``((``/``$((`` that
    is not valid arithmetic is re-read by bash as nested subshells (``((rm x))``
    runs ``rm``); and every context that evaluates text as arithmetic or as an
    array subscript runs the ``$(...)`` inside that text, even when it came
    quoted or from a variable's value (``x='a[$(rm y)]'; [[ $x -eq 1 ]]``,
    ``test -v 'a[$(rm y)]'``, ``${!x}``, ``${x@P}``, ``${s:x}``). Permission
    rules treat such input as unparseable."""
    outputs: tuple[str | None, ...] = ()
    """Targets of output redirections to files (None: an expansion), in order."""
    inputs: tuple[str | None, ...] = ()
    """Files read through ``<`` redirections (None: an expansion), in order."""


@dataclass(frozen=True, slots=True)
class Unparsed:
    """An input that was not (fully) read: too long, malformed, or too slow."""

    reason: str
    """Why, in words."""


# -- the strict unquoter ---------------------------------------------------------

_UNQUOTED_SPECIAL = frozenset("$`*?[]{}")


def literal_word(raw: str) -> str | None:
    """The value of one shell word after quote removal, or None if it expands.

    Accepts plain characters, ``'single'`` and ``"double"`` quotes (with the
    escapes bash honours inside them) and backslash escapes. Anything that
    expands — ``$``, backticks, globs, braces, a tilde — gives None. The one
    exception is the word ``{}`` (bash leaves it alone; find and xargs use it).
    """
    if raw == "{}":
        return raw
    out: list[str] = []
    i = 0
    n = len(raw)
    while i < n:
        char = raw[i]
        if char == "'":
            end = raw.find("'", i + 1)
            if end < 0:
                return None
            out.append(raw[i + 1 : end])
            i = end + 1
        elif char == '"':
            i = _double_quoted(raw, i + 1, out)
            if i < 0:
                return None
        elif char == "\\":
            if i + 1 >= n or raw[i + 1] == "\n":
                return None
            out.append(raw[i + 1])
            i += 2
        elif char in _UNQUOTED_SPECIAL or char.isspace() or _tilde(raw, i):
            return None
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _tilde(raw: str, i: int) -> bool:
    """An unquoted ``~`` bash expands: a word's start, or after ``=``/``:`` (``a=~/x``)."""
    return raw[i] == "~" and (i == 0 or raw[i - 1] in "=:")


def _double_quoted(raw: str, i: int, out: list[str]) -> int:
    """Append the body of a double-quoted part; index after it, or -1 if it expands."""
    n = len(raw)
    while i < n:
        char = raw[i]
        if char == '"':
            return i + 1
        if char in "$`":
            return -1
        if char == "\\" and i + 1 < n and raw[i + 1] in '"\\$`':
            out.append(raw[i + 1])
            i += 2
        elif char == "\\" and i + 1 < n and raw[i + 1] == "\n":
            return -1
        else:
            out.append(char)
            i += 1
    return -1


# -- bounded parse -----------------------------------------------------------------

_GLUED_CONTINUATION = re.compile(rb"\\\n[^ \t]")
"""A backslash-newline that joins text: tree-sitter and bash disagree on these."""


class _TooSlow(Exception):
    """The walk passed `TOTAL_DEADLINE` or `MAX_NODES`."""


def _tree(source: bytes, start: float) -> tree_sitter.Tree | None:
    """Parse with a deadline; None if the deadline passed."""
    import tree_sitter

    parser = tree_sitter.Parser(_language())

    def read(offset: int, _point: object) -> bytes:
        return source[offset : offset + 4096]

    def too_slow(*_state: object) -> bool:
        return time.perf_counter() - start > PARSE_DEADLINE

    try:
        return parser.parse(read, progress_callback=too_slow)
    except ValueError:  # the progress callback cancelled the parse
        return None


@functools.lru_cache(maxsize=256)
def parse_script(command: str) -> Script | Unparsed:
    """Parse `command` within `PARSE_DEADLINE` and `MAX_COMMAND_BYTES`. Never raises."""
    try:
        return _parse(command)
    except Exception as exc:  # an unforeseen tree shape: fail closed
        return Unparsed(f"the parser failed ({type(exc).__name__})")


def _source(command: str) -> bytes | Unparsed:
    """The UTF-8 source to parse, or why the text is refused before parsing."""
    if "\x00" in command:
        return Unparsed("the command contains a NUL byte")
    try:
        source = command.encode("utf-8")
    except UnicodeEncodeError:
        return Unparsed("the command is not valid UTF-8 text")
    if len(source) > MAX_COMMAND_BYTES:
        return Unparsed(f"the command is longer than {MAX_COMMAND_BYTES} bytes")
    if not command.strip():
        return Unparsed("the command is empty")
    if _GLUED_CONTINUATION.search(source):
        return Unparsed("a backslash-newline joins a word")
    if any(c in source for c in (b"\r", b"\x0b", b"\x0c")):
        # tree-sitter splits words there; bash does not
        return Unparsed("the command contains a carriage return or form feed")
    return source


def _parse(command: str) -> Script | Unparsed:
    source = _source(command)
    if isinstance(source, Unparsed):
        return source
    start = time.perf_counter()
    tree = _tree(source, start)
    if tree is None:
        return Unparsed(f"parsing took longer than {PARSE_DEADLINE * 1000:g} ms")
    root = tree.root_node
    if root.has_error:
        return Unparsed("the command does not parse as bash")
    walker = _Walker(source, start)
    try:
        walker.walk(root)
    except _TooSlow:
        return Unparsed("the command is too complex to check in time")
    if walker.unread:
        return Unparsed(walker.unread)
    return Script(
        tuple(walker.commands),
        tuple(walker.hazards),
        _last(root, source),
        opaque="arithmetic" in walker.hazards or bool(walker.evaluates),
        outputs=tuple(walker.outputs),
        inputs=tuple(walker.inputs),
    )


# -- the walk ------------------------------------------------------------------------

_FD_PATH = "/dev/fd/63"
"""What a process substitution word is to the command: a pipe's path, never an option."""

_STRUCTURE = frozenset(
    {"program", "list", "pipeline", "subshell", "compound_statement",
     "redirected_statement", "negated_command", "if_statement", "elif_clause",
     "else_clause", "while_statement", "do_group", "command_substitution",
     "string", "concatenation", "comment", "command_name", "heredoc_body",
     "herestring_redirect"}
)  # fmt: skip
"""Node types that only group other nodes; their children are walked."""

_LEAVES = frozenset(
    {"word", "raw_string", "string_content", "number", "ansi_c_string",
     "variable_name", "special_variable_name", "heredoc_start", "heredoc_end",
     "heredoc_content", "file_descriptor", "translated_string"}
)  # fmt: skip
"""Node types with nothing inside that runs or assigns."""

_HAZARDS = {
    "variable_assignment": "an assignment",
    "variable_assignments": "an assignment",
    "declaration_command": "a declaration (declare/export/local/readonly/typeset)",
    "unset_command": "unset",
    "for_statement": "a for/select loop assigns its variable",
    "c_style_for_statement": "arithmetic",
    "arithmetic_expansion": "arithmetic",
    "subscript": "an array subscript (evaluated as arithmetic)",
    "function_definition": "a function definition",
    "case_statement": "case",
}
"""Node types that make an input not read-only, with the reason."""

_OUTPUT_OPERATORS = frozenset({">", ">>", ">|", "&>", "&>>", ">&", "<>", "&>|"})
_TEST_FORBIDDEN = frozenset({"-v", "-R"})
"""`test` operators that evaluate an array subscript (runs `$(...)` inside it)."""


class _Walker:
    """Collects simple commands and hazards over the whole tree (explicit stack)."""

    def __init__(self, source: bytes, start: float = 0.0) -> None:
        self.source = source
        self.start = start
        self.commands: list[SimpleCommand] = []
        self.hazards: list[str] = []
        self.unread = ""
        """Why the tree cannot be trusted to show every command (empty: it can)."""
        self.evaluates: list[str] = []
        self.outputs: list[str | None] = []
        self.inputs: list[str | None] = []
        """Contexts that evaluate text as code (see `Script.opaque`)."""

    def text(self, node: tree_sitter.Node) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8")

    def hazard(self, reason: str) -> None:
        if reason not in self.hazards:
            self.hazards.append(reason)

    def walk(self, root: tree_sitter.Node) -> None:
        """Visit every node, bounded by `MAX_NODES` and `TOTAL_DEADLINE`."""
        stack = [root]
        visited = 0
        while stack:
            node = stack.pop()
            stack.extend(reversed(self.visit(node)))
            visited += 1
            if visited % 128 == 0 and (
                visited > MAX_NODES or time.perf_counter() - self.start > TOTAL_DEADLINE
            ):
                raise _TooSlow

    def visit(self, node: tree_sitter.Node) -> list[tree_sitter.Node]:
        """Check one node; return the children still to walk."""
        kind = node.type
        if not node.is_named:
            return []  # other operators, keywords, brackets and quotes
        if kind == "compound_statement" and self.text(node).startswith("(("):
            self.hazard("arithmetic")
        if kind in _STRUCTURE or kind in _LEAVES:
            return list(node.children)
        if kind == "command":
            return self.command(node)
        if kind in _HAZARDS:
            self.hazard(_HAZARDS[kind])
            if kind == "subscript":
                self.evaluates.append("an array subscript")
            if kind in ("declaration_command", "unset_command"):
                self.keyword_command(node)
            return list(node.children)
        return self.special(node, kind)

    def special(self, node: tree_sitter.Node, kind: str) -> list[tree_sitter.Node]:
        if kind == "simple_expansion":
            return []
        if kind == "expansion":
            if not re.fullmatch(
                r"\$\{(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+)\}", self.text(node)
            ):
                self.hazard("a parameter expansion with an operator")
            if _EVALUATING_EXPANSION.match(self.text(node)):
                self.evaluates.append("an indirect, prompt or substring expansion")
            return list(node.children)
        if kind == "process_substitution":
            if self.text(node).startswith(">"):
                self.hazard("an output process substitution >(...)")
            return list(node.children)
        if kind == "file_redirect":
            self.redirect(node)
            return list(node.children)
        if kind == "heredoc_redirect":
            self.heredoc(node)
            return list(node.children)
        if kind == "test_command":
            return self.test(node)
        self.hazard(f"unsupported shell syntax ({kind})")
        return list(node.children)

    def command(self, node: tree_sitter.Node) -> list[tree_sitter.Node]:
        words: list[tree_sitter.Node] = []
        rest: list[tree_sitter.Node] = []
        for child in node.children:
            if child.type == "command_name" or (
                words and child.is_named and child.type not in _NOT_WORDS
            ):
                words.append(child)
            elif child.type == "variable_assignment":
                self.hazard("an assignment")
            if child.is_named:
                rest.append(child)
        self.add(words)
        return rest

    def add(self, words: list[tree_sitter.Node]) -> None:
        raws = tuple(self.text(w) for w in words)
        if any(self.named_fd(w) for w in words):
            self.hazard("an assignment ({var}> names a file descriptor)")
        if any(_loose_whitespace(r) for r in raws):
            self.unread = "a word tree-sitter split differently from bash"
        spans = tuple((w.start_byte, w.end_byte) for w in words)
        values = tuple(
            _FD_PATH if w.type == "process_substitution" else literal_word(r)
            for w, r in zip(words, raws, strict=True)
        )
        self.commands.append(SimpleCommand(values, raws, spans))

    def named_fd(self, word: tree_sitter.Node) -> bool:
        """``{x}>f``: bash reads the word as a redirection that assigns ``x``.

        tree-sitter shows ``{x}`` as an argument and the redirection apart; the
        two are glued in the source (``{x} >f`` is an argument and a redirection).
        """
        glued = self.source[word.end_byte : word.end_byte + 1] in (b"<", b">")
        return glued and _NAMED_FD.fullmatch(self.text(word)) is not None

    def keyword_command(self, node: tree_sitter.Node) -> None:
        self.add([c for c in node.children if c.type != "comment"])

    def redirect(self, node: tree_sitter.Node) -> None:
        operator = next(
            (c.type for c in node.children if not c.is_named), ">"
        )  # ``&>`` has no operator child: treat a missing one as output
        targets = [
            c for c in node.children if c.is_named and c.type != "file_descriptor"
        ]
        if len(targets) > 1:  # tree-sitter hangs the command's next words here
            self.unread = "words after a redirection target"
        target = self.text(targets[-1]) if targets else ""
        if operator in _OUTPUT_OPERATORS or not operator.startswith("<"):
            if operator in (">&", "<&") and re.fullmatch(r"[0-9]+-?|-", target):
                return  # duplicate or close a descriptor
            if literal_word(target) != "/dev/null":
                self.hazard("output redirected to a file")
                self.outputs.append(literal_word(target))
        else:
            self.inputs.append(literal_word(target))

    def heredoc(self, node: tree_sitter.Node) -> None:
        """An unquoted heredoc body with a backtick: tree-sitter misses the command."""
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        quoted = start is not None and any(q in self.text(start) for q in "'\"\\")
        body = "".join(self.text(c) for c in node.children if c.type == "heredoc_body")
        if not quoted and "`" in body:
            self.unread = "a backtick inside a heredoc body"

    def test(self, node: tree_sitter.Node) -> list[tree_sitter.Node]:
        """``[ ]``: literal words only, no -v; ``[[ ]]``: always a hazard.

        ``[[ ]]`` evaluates arithmetic (``-eq``) and subscripts (``-v``) on
        expanded operands; its children are walked for the commands inside.
        """
        text = self.text(node)
        if condition_evaluates(test_tokens(text), double=text.startswith("[[")):
            self.evaluates.append("a test that may evaluate a subscript")
        if text.startswith("[["):
            self.hazard("[[ ]] (may evaluate arithmetic and subscripts)")
            return self.substitutions(node)
        inner = text[1:-1]
        if any(c in inner for c in "$`\n"):
            self.hazard("an expansion inside [ ] (could become an operator)")
            return self.substitutions(node)
        try:
            words = shlex.split(inner)
        except ValueError:
            self.hazard("unreadable [ ] expression")
            return []
        if any(w in _TEST_FORBIDDEN for w in words):
            self.hazard("[ -v ] evaluates an array subscript")
        return []

    @staticmethod
    def substitutions(node: tree_sitter.Node) -> list[tree_sitter.Node]:
        """The command and process substitutions below `node` (for the rules)."""
        found: list[tree_sitter.Node] = []
        stack = [node]
        while stack:
            current = stack.pop()
            for child in current.children:
                if child.type in ("command_substitution", "process_substitution"):
                    found.append(child)
                else:
                    stack.append(child)
        return found


def _loose_whitespace(raw: str) -> bool:
    """True if a word starts or ends with whitespace.

    bash never makes such a word (quoted whitespace needs its quotes); a word
    node holding one means tree-sitter read the input differently — it can glue
    the newline after ``EOF`` to a backslash-escaped name on the next line).
    """
    return raw[:1].isspace() or raw[-1:].isspace()


_EVALUATING_EXPANSION = re.compile(
    r"\$\{(?:!|[^}]*@|#?[A-Za-z_][A-Za-z0-9_]*:(?![-=?+]))"
)
"""``${!x}`` (the value names a variable: ``a[$(rm y)]``), ``${x@P}`` (prompt
expansion runs ``$(...)``), ``${x:off:len}`` (arithmetic on variable values)."""

_NAMED_FD = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")

_NOT_WORDS = frozenset(
    {"file_redirect", "heredoc_redirect", "herestring_redirect", "variable_assignment",
     "comment"}
)  # fmt: skip


def _last(root: tree_sitter.Node, source: bytes) -> SimpleCommand | None:
    """The simple command whose exit status is the whole input's, if there is one."""
    node: tree_sitter.Node | None = root
    while node is not None and node.type != "command":
        if node.type in ("program", "list", "pipeline", "redirected_statement"):
            named = [
                c
                for c in node.children
                if c.is_named and c.type not in _NOT_WORDS and c.type != "comment"
            ]
            if node.type == "redirected_statement":
                named = named[:1]
            node = named[-1] if named else None
        else:
            return None
    if node is None:
        return None
    walker = _Walker(source)
    walker.command(node)
    return walker.commands[0]
