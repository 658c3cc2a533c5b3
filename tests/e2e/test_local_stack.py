"""`trawl up` / `status` / `down` on a fresh home: everything starts, reports healthy, and stops."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import grpc
import pytest

from libs.common.grpc_auth import bearer_metadata
from libs.common.wire import linkbase as lb_pb
from libs.common.wire import linkbase_grpc
from libs.localinfra import procs
from libs.localinfra.ports import free_port, port_open
from tests.integration.common.guarded_calls import reflection_probe

pytestmark = pytest.mark.e2e


def _free_block(size: int) -> int:
    for _ in range(50):
        base = free_port()
        if base + size < 65000 and not any(port_open("127.0.0.1", base + i) for i in range(size)):
            return base
    raise RuntimeError("no free block of ports")


def trawl(env: dict[str, str], *args: str, timeout: float = 180) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", *args, "--json"], env=env, capture_output=True, text=True,
        timeout=timeout, cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr + done.stdout
    payload: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return payload


def add_site(address: str, metadata: tuple[tuple[str, str], ...] | None) -> grpc.StatusCode:
    """Calls the link base's AddSites; the status it ended with."""
    with grpc.insecure_channel(address) as channel:
        try:
            linkbase_grpc.LinkbaseServiceStub(channel).AddSites(
                lb_pb.AddSitesRequest(sites=[lb_pb.Site(start_url="http://site-000.test/")]),
                timeout=10, metadata=metadata)
        except grpc.RpcError as exc:
            return exc.code()
    return grpc.StatusCode.OK


def test_up_status_down_cycle_leaves_nothing_behind(localinfra_root: Path) -> None:
    home = localinfra_root / f"stack-{os.getpid()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAWL_")}
    env.update({
        "TRAWL_HOME": str(home),
        "TRAWL_LOCAL_BROKER_PORT": str(free_port()),
        "TRAWL_LOCAL_POSTGRES_PORT": str(free_port()),
        "TRAWL_LOCAL_GRPC_BASE_PORT": str(_free_block(6)),
        "TRAWL_LOCAL_METRICS_BASE_PORT": "0",
    })
    try:
        first = trawl(env, "up")
        assert set(first["grpc"]) == {"scheduler", "linkbase", "fetcher", "extractor", "dedup", "importance"}
        recorded = json.loads((home / "stack.json").read_text())["services"]
        # on the stack's own broker the stages off the fetch loop wait longer for data (LOCAL_BROKER_ENV)
        assert {env_["TRAWL_KAFKA_FETCH_WAIT_MAX_MS"] for env_ in recorded.values()} == {"500"}
        status = trawl(env, "status")
        parts = {p["name"]: p for p in status["parts"]}
        assert all(p["health"] == "SERVING" for p in parts.values()), parts
        pids = {name: p["pid"] for name, p in parts.items()}
        assert all(isinstance(pid, int) for pid in pids.values()), pids

        trawl(env, "up")  # safe to run twice: the same processes keep running
        again = {p["name"]: p["pid"] for p in trawl(env, "status")["parts"]}
        assert again == pids

        seeds = trawl(env, "seeds", "add", "http://site-000.test/", "javascript:void(0)")
        assert seeds["accepted"] == 1 and len(seeds["rejected"]) == 1

        # Every service has the stack's one token: the link base's API refuses a call without it.
        linkbase = f"127.0.0.1:{first['grpc']['linkbase']}"
        token = (home / "admin-token").read_text().split()[0]
        assert add_site(linkbase, None) == grpc.StatusCode.UNAUTHENTICATED
        assert add_site(linkbase, bearer_metadata("wrong")) == grpc.StatusCode.UNAUTHENTICATED
        assert add_site(linkbase, bearer_metadata(token)) == grpc.StatusCode.OK

        # A generic client that knows only the address finds the standard health service on every one.
        if importlib.util.find_spec("grpc_requests") is not None:
            for service, port in first["grpc"].items():
                seen = asyncio.run(reflection_probe(f"127.0.0.1:{port}", "grpc.health.v1.Health/Check={}"))
                assert "grpc.health.v1.Health" in seen["services"], service
                assert seen["calls"][0]["response"] == {"status": "SERVING"}, service

        stopped = trawl(env, "down")
        assert set(stopped["stopped"]) == {"services", "broker", "postgres"}
        left = [name for name, pid in pids.items() if procs.pid_alive(pid)]
        assert left == []
        after = trawl(env, "status")
        assert all(p["health"] == "STOPPED" for p in after["parts"])
    finally:
        subprocess.run([sys.executable, "-m", "cli.main", "down"], env=env, capture_output=True, timeout=120,
                       cwd=Path(__file__).resolve().parents[2])
