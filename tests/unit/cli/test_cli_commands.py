"""The `trawl` command's surface: help, clear failures, no stack needed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli.main", *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env=env or dict(os.environ))


def test_help_lists_the_commands() -> None:
    done = run("--help")
    assert done.returncode == 0
    for command in ("up", "down", "status", "seeds", "demo", "crawl", "stats", "pause", "resume"):
        assert command in done.stdout


def test_crawling_the_real_web_fails_clearly_when_it_cannot_be_reached(tmp_path: Path) -> None:
    env = {**os.environ, "TRAWL_HOME": str(tmp_path)}
    done = run("crawl", "http://unreachable.invalid/", env=env)
    assert done.returncode == 3
    assert "cannot reach unreachable.invalid" in done.stdout
    assert not (tmp_path / "stack.json").exists()  # nothing was started


def test_commands_that_need_a_stack_say_so(tmp_path: Path) -> None:
    env = {**os.environ, "TRAWL_HOME": str(tmp_path)}
    done = run("stats", env=env)
    assert done.returncode == 1
    assert "trawl up" in done.stdout


def test_a_bad_setting_is_reported_not_raised(tmp_path: Path) -> None:
    env = {**os.environ, "TRAWL_HOME": str(tmp_path), "TRAWL_LOCAL_BROKER_PORT": "not-a-port"}
    done = run("status", env=env)
    assert done.returncode == 2
    assert "TRAWL_LOCAL_BROKER_PORT" in done.stdout
