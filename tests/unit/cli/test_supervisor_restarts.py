"""The local stack's supervisor starts again a service that exits, and can run in a thread over started processes."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from cli.stack import processes
from cli.stack.processes import ServiceProcess, Supervisor


def test_a_process_that_exits_is_started_again(tmp_path: Path) -> None:
    # A module that does not exist: the interpreter exits with status 1 at once, as a stalled service does.
    dying = ServiceProcess("dying", {}, tmp_path / "dying.log", module="libs.no_such_module")
    dying.start()
    supervisor = Supervisor([dying])
    thread = threading.Thread(target=supervisor.run, kwargs={"install_signals": False, "start": False,
                                                             "stop": False}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while dying.restarts < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        supervisor.request_stop()
        thread.join(timeout=5)
    assert dying.restarts >= 2
    assert dying.proc is not None and dying.proc.wait(5) == 1
    assert processes.MAX_BACKOFF <= 10.0
