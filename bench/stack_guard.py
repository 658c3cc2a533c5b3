"""``python -m bench.stack_guard PID``: takes a benchmark's local stack down once process PID is gone.

A benchmark brings its stack up in a throwaway home and takes it down on the way out
(``bench.trawl_stack_run.bench_stack``). A benchmark killed, or crashing in native code, never gets
there: its services, broker and PostgreSQL would go on running, idle but polling, and every later
measurement on the machine would pay their CPU without showing it. The benchmark starts this guard
beside its stack, in a session of its own, with the stack's environment (``TRAWL_HOME`` and ports), and
stops it on a normal way out; if the benchmark's process goes first, the guard stops the stack and
removes its home.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence

from cli.stack import local_stack
from cli.stack.layout import StackSettings
from libs.common.settings import load_settings
from libs.localinfra import procs

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0


def watch(pid: int, on_gone: Callable[[], None], poll: float = POLL_SECONDS) -> None:
    """Returns once process ``pid`` is gone, after calling ``on_gone``."""
    while procs.pid_alive(pid):
        time.sleep(poll)
    on_gone()


def take_down(settings: StackSettings) -> None:
    log.warning("the benchmark's process is gone: stopping its stack in %s", settings.home)
    local_stack.down(settings)
    shutil.rmtree(settings.root, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or not args[0].isdigit():
        print("usage: python -m bench.stack_guard PID (with the stack's TRAWL_ environment)", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s stack_guard %(message)s")
    settings = load_settings(StackSettings, os.environ)
    watch(int(args[0]), lambda: take_down(settings))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
