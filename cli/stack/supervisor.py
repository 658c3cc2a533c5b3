"""``python -m cli.stack.supervisor HOME``: runs the services recorded in HOME/stack.json."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from cli.stack.layout import StackState
from cli.stack.processes import ServiceProcess, Supervisor
from libs.common.logs import configure_logging


def main() -> None:
    home = Path(sys.argv[1])
    configure_logging("supervisor")
    state = StackState.load(home / "stack.json")
    if state is None:
        raise SystemExit(f"no stack state in {home}")
    (home / "run").mkdir(parents=True, exist_ok=True)
    (home / "run" / "supervisor.pid").write_text(str(os.getpid()))
    processes = [
        ServiceProcess(name, env, home / "logs" / f"{name}.log", pid_file=home / "run" / f"{name}.pid")
        for name, env in state.services.items()
    ]
    try:
        Supervisor(processes).run()
    finally:
        (home / "run" / "supervisor.pid").unlink(missing_ok=True)
        logging.getLogger(__name__).info("supervisor stopped")


if __name__ == "__main__":
    main()
