"""The admin API's commands: every call has one, failures are clear, answers are plain JSON."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from cli.admin.tables import policy_text, when
from cli.admin_client import as_dict
from cli.main import app
from libs.common.wire import admin as admin_pb
from libs.common.wire import linkbase as linkbase_pb
from libs.common.wire import messages as pb
from libs.localinfra.ports import free_port

ROOT = Path(__file__).resolve().parents[3]
COMMANDS = {
    (): ["seeds", "sites", "hosts", "url", "top", "stats", "pause", "resume", "drain", "goal"],
    ("seeds",): ["add", "remove", "list"],
    ("sites",): ["add", "remove", "list"],
    ("hosts", "policy"): ["set", "show", "clear"],
    ("url",): ["show"],
    ("stats",): ["hosts", "topics"],
    ("goal",): ["show", "set", "stop", "reset"],
}
RPC_COMMANDS = {
    "AddSeeds": "seeds add", "RemoveSeeds": "seeds remove", "ListSeeds": "seeds list", "AddSites": "sites add",
    "RemoveSites": "sites remove", "ListSites": "sites list", "PauseCrawl": "pause", "ResumeCrawl": "resume",
    "DrainCrawl": "drain", "GetCrawlStats": "stats", "SetHostPolicy": "hosts policy set",
    "ListHostPolicies": "hosts policy show", "ClearHostPolicies": "hosts policy clear", "LookupUrl": "url show",
    "ExplainUrl": "url explain",
    "GetTopPages": "top", "GetHostStats": "stats hosts", "GetTopicStats": "stats topics",
    "GetCrawlGoal": "goal show", "SetCrawlGoal": "goal set",
}


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli.main", *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env=env or dict(os.environ))


def test_every_rpc_of_the_admin_api_has_a_command() -> None:
    rpcs = {m.name for m in admin_pb.DESCRIPTOR.services_by_name["AdminService"].methods}
    assert rpcs == set(RPC_COMMANDS)
    runner = CliRunner()
    for group, commands in COMMANDS.items():
        done = runner.invoke(app, [*group, "--help"], terminal_width=200)
        assert done.exit_code == 0, done.output
        for command in commands:
            assert command in done.output, (group, command)
    for command in set(RPC_COMMANDS.values()):
        done = runner.invoke(app, [*command.split(), "--help"], terminal_width=200)
        assert done.exit_code == 0, (command, done.output)
        assert "--admin" in done.output and "--json" in done.output, command


def test_an_unreachable_admin_api_is_reported_clearly(tmp_path: Path) -> None:
    env = {**os.environ, "TRAWL_HOME": str(tmp_path), "TRAWL_ADMIN_TOKEN": "t"}
    done = run("stats", "--admin", f"127.0.0.1:{free_port()}", env=env)
    assert done.returncode == 1
    assert "cannot reach the admin API at 127.0.0.1:" in done.stdout
    by_env = run("seeds", "list", env={**env, "TRAWL_ADMIN_ADDRESS": f"127.0.0.1:{free_port()}"})
    assert by_env.returncode == 1 and "cannot reach the admin API" in by_env.stdout


def test_without_a_stack_or_an_address_the_commands_say_what_to_do(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRAWL_ADMIN_ADDRESS"}
    done = run("url", "show", "http://a.example/", env={**env, "TRAWL_HOME": str(tmp_path)})
    assert done.returncode == 1
    assert "trawl up" in done.stdout and "--admin" in done.stdout


def test_answers_become_plain_json_values() -> None:
    report = admin_pb.UrlReport(url="http://a.example/", held_by=["paused"], next_fetch_at_ms=2**40)
    report.fetches.append(linkbase_pb.FetchEvent(status=pb.FETCH_STATUS_OK, http_status=200))
    out = as_dict(report)
    assert out["next_fetch_at_ms"] == 2**40  # an int, not the JSON mapping's string
    assert out["held_by"] == ["paused"] and out["fetches"][0]["status"] == "FETCH_STATUS_OK"
    assert out["predicted_changes_per_day"] is None and out["importance"] is None  # not set
    report.predicted_changes_per_day = 0.0
    assert as_dict(report)["predicted_changes_per_day"] == 0.0  # set to zero: present


def test_a_policy_reads_in_one_line() -> None:
    assert policy_text(None) == ""
    policy = as_dict(admin_pb.HostPolicy(host="a", min_delay_seconds=2.5, max_concurrency=0, budget=10,
                                         blocked_until_ms=86_400_000, note="asked"))
    assert policy_text(policy) == (
        "delay=2.5s concurrency=0 budget=10 blocked_until=1970-01-02T00:00:00Z note='asked'"
    )
    assert when(0) == "" and when(None) == ""
