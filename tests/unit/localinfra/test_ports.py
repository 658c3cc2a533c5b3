"""free_port: outside the ephemeral range, never handed out twice while reserved, bound ports skipped."""

from __future__ import annotations

import os
import random
import socket
import time
from pathlib import Path

import pytest

from libs.localinfra import ports
from libs.localinfra.ports import candidate_ranges, ephemeral_range, free_port


def test_the_ephemeral_range_is_read_from_the_kernel_file(tmp_path: Path) -> None:
    path = tmp_path / "range"
    path.write_text("40000\t50000\n")
    assert ephemeral_range(path) == (40000, 50000)
    path.write_text("garbage")
    assert ephemeral_range(path) == ports.DEFAULT_EPHEMERAL
    assert ephemeral_range(tmp_path / "missing") == ports.DEFAULT_EPHEMERAL


def test_candidates_avoid_the_ephemeral_range() -> None:
    assert candidate_ranges((32768, 60999)) == [range(10000, 32768), range(61000, 65536)]
    assert candidate_ranges((10500, 65000)) == [range(10000, 65536)]  # nothing usable left: everything


def test_ports_come_from_outside_the_ephemeral_range_and_are_bindable(tmp_path: Path) -> None:
    low, high = 20000, 60000
    for _ in range(20):
        port = free_port(reservations=tmp_path, ephemeral=(low, high))
        assert ports.LOWEST_PORT <= port < low or high < port <= 65535
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def _some_bindable_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_a_live_reservation_of_another_process_is_respected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every candidate but one reserved by "another process" just now: only that one can be handed out.
    free = _some_bindable_port()
    candidates = range(free - 10, free + 10)
    for port in candidates:
        if port != free:
            (tmp_path / str(port)).touch()
    monkeypatch.setattr(ports, "candidate_ranges", lambda _ephemeral: [candidates])
    monkeypatch.setattr(ports, "_handed_out", set())
    assert free_port(reservations=tmp_path, rng=random.Random(1)) == free
    assert (tmp_path / str(free)).exists()
    with pytest.raises(OSError, match="no free port"):  # and now it is reserved too
        monkeypatch.setattr(ports, "_handed_out", set())
        free_port(reservations=tmp_path, rng=random.Random(1))


def test_a_lapsed_reservation_is_taken_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    free = _some_bindable_port()
    old = time.time() - ports.RESERVATION_SECONDS - 5
    (tmp_path / str(free)).touch()
    os.utime(tmp_path / str(free), (old, old))
    monkeypatch.setattr(ports, "candidate_ranges", lambda _ephemeral: [range(free, free + 1)])
    monkeypatch.setattr(ports, "_handed_out", set())
    assert free_port(reservations=tmp_path, rng=random.Random(2)) == free
    assert time.time() - (tmp_path / str(free)).stat().st_mtime < 60


def test_a_port_something_listens_on_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    free = _some_bindable_port()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        taken = listener.getsockname()[1]
        monkeypatch.setattr(ports, "candidate_ranges",
                            lambda _ephemeral: [range(taken, taken + 1), range(free, free + 1)])
        monkeypatch.setattr(ports, "_handed_out", set())
        assert free_port(reservations=tmp_path, rng=random.Random(3)) == free


def test_a_port_handed_out_here_is_not_handed_out_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    free = _some_bindable_port()
    monkeypatch.setattr(ports, "candidate_ranges", lambda _ephemeral: [range(free, free + 1)])
    monkeypatch.setattr(ports, "_handed_out", set())
    assert free_port(reservations=tmp_path / "a") == free
    with pytest.raises(OSError, match="no free port"):  # even with no reservation file to stop it
        free_port(reservations=tmp_path / "b")


def test_no_port_is_handed_out_twice(tmp_path: Path) -> None:
    handed = [free_port(reservations=tmp_path) for _ in range(50)]
    assert len(set(handed)) == len(handed)
