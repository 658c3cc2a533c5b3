"""``trawl topics ...``: inspect the topics of any Kafka, and send dead letters back.

Each module here registers its commands on ``app``; every command prints tables for
people and, with ``--json``, JSON for scripts. ``docs/operations.md`` shows them at work.
"""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(help="Inspect topics: counts, consumer lag, records decoded, dead letters.", no_args_is_help=True)

# One module per group of commands; each defines ``register(app: typer.Typer) -> None``.
COMMANDS: tuple[str, ...] = ("commands", "message_commands")

for _name in COMMANDS:
    importlib.import_module(f"cli.topics.{_name}").register(app)
