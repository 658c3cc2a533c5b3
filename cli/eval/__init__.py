"""``trawl eval ...``: offline evaluators that drive the same policy classes the services run.

Each evaluator lives in its own module here and registers one command on ``app``; every
command prints a table for people and, with ``--json``, one JSON object whose keys are
documented in ``docs/evaluation.md``.
"""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(help="Offline evaluators (same code as the services).", no_args_is_help=True)

# One module per evaluator; each defines ``register(app: typer.Typer) -> None``.
EVALUATORS: tuple[str, ...] = ("dedup", "bandit", "partition", "freshness", "ordering")

for _name in EVALUATORS:
    importlib.import_module(f"cli.eval.{_name}").register(app)
