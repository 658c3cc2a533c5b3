"""A simulated web served by a process of its own, judged from its request log afterwards.

The request log is what a crawl's politeness is judged by: the end of each response and
the start of the next request to the same host. A server that shares its process (and
the GIL) with other busy Python stamps a response's end only once its thread runs again,
which on a loaded machine can be tens of milliseconds after the bytes left: the gaps it
measures come out shorter than the ones the crawler kept. In a process of its own the
server stamps within the event loop turn that wrote the response, and its CPU is
measured apart from the crawler's; the web's objects are kept out of the garbage collector's
full collections, which would otherwise pause it for tens of milliseconds.

    python -m libs.simweb.process CONFIG LOG_FILE [--no-gzip] [--render]

serves the web that ``CONFIG`` (a :class:`SimWebConfig` or a :class:`~libs.simweb.site_tree.TreeWebConfig`,
pickled by :class:`SimWebProcess`)
describes on a free loopback port, prints its address once listening, appends every
request to ``LOG_FILE`` as a JSON line and stops on SIGTERM or SIGINT. Its clock stands still at
the web's start; SIGUSR1 moves it on by the config's ``page_edit_interval`` (the next round of
page edits, :meth:`SimWebProcess.advance`), and it prints ``advanced <instant>`` when it has.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import pickle
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from libs.simweb import web as simweb_pages
from libs.simweb.build import build_web
from libs.simweb.clock import SimClock
from libs.simweb.config import SimWebConfig
from libs.simweb.request_log import RequestRecord, read_log_file
from libs.simweb.server import SimWebServer
from libs.simweb.site_tree import TreeWebConfig, build_tree_web
from libs.simweb.web import SimWeb

REPO = Path(__file__).resolve().parents[2]


def build_served_web(config: SimWebConfig | TreeWebConfig) -> SimWeb:
    """The web ``config`` describes, whichever kind it is (the same in any process)."""
    return build_tree_web(config) if isinstance(config, TreeWebConfig) else build_web(config)


def render_all(web: SimWeb) -> SimWeb:
    """Renders every page of ``web`` and keeps it, so that serving measures no page rendering."""
    simweb_pages.HTML_CACHE_SIZE = max(simweb_pages.HTML_CACHE_SIZE, len(web.pages) + 1)
    for url in web.pages:
        web.html(url)
    return web


class SimWebProcess:
    """The web of ``config`` served by a child process: ``start()`` returns its address (an HTTP proxy)."""

    def __init__(self, config: SimWebConfig | TreeWebConfig, log_file: Path, *, gzip: bool = True,
                 render: bool = False) -> None:
        """``gzip``: compress for clients that accept it; ``render``: render every page before serving."""
        self.config = config
        self.log_file = log_file
        self.gzip = gzip
        self.render = render
        self.url = ""
        self._proc: subprocess.Popen[str] | None = None

    def start(self) -> str:
        self.log_file.unlink(missing_ok=True)
        config_file = self.log_file.with_name(self.log_file.name + ".config")
        config_file.write_bytes(pickle.dumps(self.config))
        argv = [sys.executable, "-m", "libs.simweb.process", str(config_file), str(self.log_file)]
        argv += [] if self.gzip else ["--no-gzip"]
        argv += ["--render"] if self.render else []
        self._proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, text=True,
                                      env={**os.environ, "PYTHONUNBUFFERED": "1"})
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().strip()  # "" when the child died first
        if not line.startswith("http://"):
            try:
                code: int | None = self._proc.wait(5)
            except subprocess.TimeoutExpired:  # alive, but printed something else
                code = None
            self.stop()
            raise RuntimeError(f"the simulated web did not start (exit {code}): {line!r}")
        self.url = line
        return line

    def advance(self) -> str:
        """Moves the web's clock on by its ``page_edit_interval`` (the next round of edits); returns the new instant."""
        if self._proc is None or self._proc.stdout is None:
            raise RuntimeError("the simulated web is not started")
        self._proc.send_signal(signal.SIGUSR1)
        line = self._proc.stdout.readline().strip()
        if not line.startswith("advanced "):
            raise RuntimeError(f"the simulated web did not advance its clock: {line!r}")
        return line.removeprefix("advanced ")

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise RuntimeError("the simulated web is not started")
        return self._proc.pid

    @property
    def request_log(self) -> list[RequestRecord]:
        """Every request served so far (a line being written at this moment may be left out)."""
        return read_log_file(self.log_file) if self.log_file.exists() else []

    def stop(self) -> None:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def stop_on_signals() -> asyncio.Event:
    """An event that SIGINT or SIGTERM sets (call it from the running loop)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    return stop


async def stop_with_parent(stop: asyncio.Event, every: float = 1.0) -> None:
    """Sets ``stop`` once the process that started this one is gone (this one handed to another parent): a
    benchmark or test killed before it could stop its web leaves no server behind to load the machine."""
    parent = os.getppid()
    while not stop.is_set():
        if os.getppid() != parent:
            stop.set()
            return
        await asyncio.sleep(every)


async def serve(config: SimWebConfig | TreeWebConfig, log_file: Path, *, gzip: bool, render: bool) -> None:
    web = build_served_web(config)
    if render:
        render_all(web)
    # The web's graph is some 160,000 objects for 5,000 pages, which a full garbage collection walks in
    # about 45 ms: one that ran between a response's write and its end's stamp made a gap the crawler
    # kept look 45 ms shorter. They never become garbage, so the collector leaves them out from now on.
    gc.freeze()
    clock = SimClock.frozen(web.start_time)
    server = SimWebServer(web, clock, gzip=gzip, log_file=log_file)
    stop = stop_on_signals()

    def advance() -> None:
        clock.advance(web.config.page_edit_interval)
        print(f"advanced {clock.now().isoformat()}", flush=True)

    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, advance)
    await server.start()
    orphaned = asyncio.create_task(stop_with_parent(stop))
    try:
        print(server.url, flush=True)
        await stop.wait()
    finally:
        orphaned.cancel()
        await server.stop()  # closes the log, so that every line is on disk


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m libs.simweb.process", description=__doc__.splitlines()[0])
    parser.add_argument("config", type=Path, help="a SimWebConfig or TreeWebConfig pickled by SimWebProcess")
    parser.add_argument("log_file", type=Path)
    parser.add_argument("--no-gzip", action="store_true")
    parser.add_argument("--render", action="store_true")
    args = parser.parse_args(argv)
    config = pickle.loads(args.config.read_bytes())
    if not isinstance(config, SimWebConfig | TreeWebConfig):
        print(f"error: {args.config} holds no SimWebConfig or TreeWebConfig", file=sys.stderr)
        return 2
    asyncio.run(serve(config, args.log_file, gzip=not args.no_gzip, render=args.render))
    return 0


if __name__ == "__main__":
    sys.exit(main())
