"""`toolweave config`: the effective settings and where each value came from."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ._settings import PROJECT_FILE, LoadedSettings, flatten, user_config_path

__all__ = ["render_config"]


def _short(source: str) -> str:
    if source == str(user_config_path()):
        return "user config.toml"
    if source.endswith(PROJECT_FILE):
        return f"project {PROJECT_FILE}"
    return source


def render_config(loaded: LoadedSettings) -> RenderableType:
    """One row per setting: key, value, source (``default`` when nobody set it)."""
    table = Table(show_edge=False, header_style="bold")
    table.add_column("setting", no_wrap=True)
    table.add_column("value")
    table.add_column("from", style="dim", no_wrap=True)
    data = loaded.settings.model_dump(mode="json")
    for key, value in flatten(data):
        source = loaded.source_of(key)
        shown = "(none)" if value is None or value == {} or value == [] else repr(value)
        style = "" if source != "default" else "dim"
        table.add_row(key, escape(shown), escape(_short(source)), style=style)
    files = [str(p) for p in loaded.files] or ["(none)"]
    header = Text.from_markup(
        f"[bold]settings files read:[/] {escape(', '.join(files))}\n"
        f"[dim]user config.toml: {escape(str(user_config_path()))} · project {PROJECT_FILE}:"
        " the nearest one, up to the git root[/]"
    )
    return Group(header, table)
