"""``trawl demo`` fails (exit 1) when its own checks do: pages missed, or politeness broken by the server's log."""

from __future__ import annotations

from typing import Any

from typer.testing import CliRunner

import cli.demo
from cli.demo import demo_failures
from cli.main import app

POLITE = {"requests": 10, "hosts_with_two_in_flight": [], "hosts_with_gap_below_delay": {}, "robots_violations": [],
          "ok": True}


def _report(**changes: Any) -> dict[str, Any]:
    return {"pages_fetched": 10, "missed": 0, "failed": 0, "politeness": POLITE, **changes}


def test_a_complete_polite_crawl_passes() -> None:
    assert demo_failures(_report()) == []


def test_missed_pages_and_a_broken_gap_are_each_named() -> None:
    rude = {**POLITE, "hosts_with_gap_below_delay": {"a.test": 0.17}, "ok": False}
    failures = demo_failures(_report(missed=3, politeness=rude))
    assert len(failures) == 2
    assert "3 reachable, allowed pages were not fetched" in failures[0]
    assert "a.test" in failures[1] and "0.17" in failures[1]
    assert demo_failures({}) == ["politeness or robots.txt violated, by the server's request log: {}"]  # no check ran


def test_the_command_exits_1_on_a_failed_check(monkeypatch: Any) -> None:
    reports = iter([_report(), _report(missed=1)])
    monkeypatch.setattr(cli.demo, "run_demo", lambda *args, **kwargs: next(reports))
    runner = CliRunner()
    assert runner.invoke(app, ["demo", "--json"]).exit_code == 0
    failed = runner.invoke(app, ["demo", "--json"])
    assert failed.exit_code == 1
    assert "trawl demo: 1 reachable, allowed pages were not fetched" in failed.stderr
