"""The benchmark stack's guard: it acts once the benchmark's process is gone, not before."""

from __future__ import annotations

import subprocess
import sys
import time

from bench import stack_guard


def test_the_guard_acts_once_the_process_is_gone() -> None:
    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.6)"])
    acted: list[float] = []
    started = time.monotonic()
    stack_guard.watch(parent.pid, lambda: acted.append(time.monotonic()), poll=0.05)
    parent.wait()
    assert len(acted) == 1 and acted[0] - started >= 0.5  # not while the process lived


def test_the_guard_wants_a_pid() -> None:
    assert stack_guard.main([]) == 2
    assert stack_guard.main(["nope"]) == 2
