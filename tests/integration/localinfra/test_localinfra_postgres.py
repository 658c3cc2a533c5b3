"""LocalPostgres against the real embedded PostgreSQL: start, reuse, crash recovery, stop."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from libs.localinfra import LocalInfraError, LocalPostgres, free_port, procs

pytestmark = pytest.mark.integration


@pytest.fixture
def own_pg(localinfra_root: Path, unique_name: Callable[[str], str]) -> Iterator[LocalPostgres]:
    """A server of this test's own (the shared one must not be killed), stopped afterwards."""
    server = LocalPostgres(localinfra_root / unique_name("pg") / "data", free_port(), fast=True)
    try:
        yield server
    finally:
        server.stop(mode="immediate")


def test_starts_and_answers(own_pg: LocalPostgres) -> None:
    dsn = own_pg.ensure_started()

    assert dsn == f"postgresql://postgres@127.0.0.1:{own_pg.port}/trawl"
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
        assert conn.execute("SELECT current_database()").fetchone() == ("trawl",)
        assert conn.execute("SHOW fsync").fetchone() == ("off",)
        assert conn.execute("SHOW max_connections").fetchone() == ("200",)


def test_ensure_started_twice_reuses_the_server(own_pg: LocalPostgres) -> None:
    first = own_pg.ensure_started()
    pid = own_pg.pid()

    # A second manager on the same folder stands for another process.
    again = LocalPostgres(own_pg.data_dir, own_pg.port, fast=True)

    assert again.ensure_started() == first
    assert own_pg.ensure_started() == first
    assert pid is not None and again.pid() == pid


def test_ensure_started_refuses_a_different_port(own_pg: LocalPostgres) -> None:
    own_pg.ensure_started()

    with pytest.raises(LocalInfraError, match="already runs"):
        LocalPostgres(own_pg.data_dir, free_port()).ensure_started()


def test_restarts_after_the_postmaster_is_killed(own_pg: LocalPostgres) -> None:
    dsn = own_pg.ensure_started()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET synchronous_commit = on")
        conn.execute("CREATE TABLE survivor (v text)")
        conn.execute("INSERT INTO survivor VALUES ('kept')")
    killed = own_pg.pid()
    assert killed is not None

    os.kill(killed, signal.SIGKILL)
    assert procs.wait_gone(killed, 5.0)
    assert not own_pg.is_running()

    assert own_pg.ensure_started() == dsn
    assert own_pg.pid() not in (None, killed)
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT v FROM survivor").fetchall() == [("kept",)]


def test_stop_leaves_no_process(own_pg: LocalPostgres) -> None:
    own_pg.ensure_started()
    pid = own_pg.pid()
    assert pid is not None

    own_pg.stop()

    assert not procs.pid_alive(pid)
    assert procs.processes_in_dir(own_pg.data_dir) == []
    assert own_pg.pid() is None and not own_pg.is_running()
    own_pg.stop()  # stopping a stopped server is a no-op
