"""The `trawl topics` surface with no broker: help, offline locate, clear failures."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cli.main import app
from libs.common.kafka.partitioner import partition_for

NOWHERE = ["--bootstrap", "127.0.0.1:1", "--timeout", "2"]  # nothing listens on port 1


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["topics", *args])
    return result.exit_code, result.stdout


def test_help_lists_the_commands() -> None:
    code, out = run("--help")
    assert code == 0
    for command in ("list", "groups", "locate", "peek", "tail", "replay-dead-letters"):
        assert command in out


def test_locate_offline_needs_no_broker() -> None:
    code, out = run("locate", "http://a.test/x", "--offline", "--json", *NOWHERE)
    assert code == 0
    places = {p["topic"]: p for p in json.loads(out)["topics"]}
    assert places["trawl.fetch-requests"]["partition"] == partition_for("a.test", 12)


def test_an_unreachable_broker_is_one_clear_line_and_status_1() -> None:
    code, out = run("list", *NOWHERE)
    assert code == 1
    assert "Kafka at 127.0.0.1:1 (from --bootstrap) failed" in out


def test_bad_arguments_are_refused_with_status_2() -> None:
    code, out = run("peek", "trawl.documents", "--offset", "1", "--last", "2", *NOWHERE)
    assert code == 2 and "give one start" in out
    code, out = run("locate", "mailto:x@a.test", "--offline")
    assert code == 2 and "not a URL the crawler accepts" in out
