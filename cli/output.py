"""Tables for people, one JSON object for scripts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

console = Console()


def emit(as_json: bool, payload: dict[str, Any], title: str, columns: Sequence[str],
         rows: Sequence[Sequence[Any]]) -> None:
    if as_json:
        print(json.dumps(payload, default=str))
        return
    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*("" if v is None else str(v) for v in row))
    console.print(table)
