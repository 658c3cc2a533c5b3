"""``SimWebProcess``: the web of a config served by a child process, its requests read back from the log."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from libs.localinfra import procs
from libs.simweb import SimWebConfig, build_web
from libs.simweb.process import SimWebProcess, main

REPO = Path(__file__).resolve().parents[3]
CONFIG = SimWebConfig(seed=11, hosts=6, pages=60, host_size_exponent=0.3, crawl_delay_values=(0.3,))


def _get(proxy: str, url: str, accept_gzip: bool = False) -> tuple[int, str, bytes]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy}))
    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip" if accept_gzip else "identity"})
    with opener.open(request, timeout=20) as response:
        return response.status, response.headers.get("Content-Encoding", ""), response.read()


def test_the_child_serves_the_web_of_the_config_and_logs_every_request(tmp_path: Path) -> None:
    web = build_web(CONFIG)  # what the parent builds from the same config: the same pages
    home, other = web.home_pages()[0], sorted(web.pages)[-1]
    served = SimWebProcess(CONFIG, tmp_path / "requests.jsonl")
    proxy = served.start()
    try:
        assert proxy.startswith("http://127.0.0.1:") and served.pid != os.getpid()
        status, _, body = _get(proxy, home)
        assert status == 200 and body.decode() == web.html(home)
        assert _get(proxy, other)[0] == 200
    finally:
        served.stop()  # a request is logged once its response is out: stopping waits for the last line
    assert [(r.host, r.path, r.status) for r in served.request_log] == [
        (h, p, 200) for h, p in ((home.split("/")[2], "/"), (other.split("/")[2], "/" + other.split("/", 3)[3]))
    ]
    record = served.request_log[0]
    assert 0 <= record.finished_at - record.started_at < 5
    served.stop()  # twice is harmless


def test_options_reach_the_child(tmp_path: Path) -> None:
    home = build_web(CONFIG).home_pages()[0]
    compressed = SimWebProcess(CONFIG, tmp_path / "a.jsonl")
    plain = SimWebProcess(CONFIG, tmp_path / "b.jsonl", gzip=False, render=True)
    try:
        _, encoding, body = _get(compressed.start(), home, accept_gzip=True)
        assert encoding == "gzip" and gzip.decompress(body).startswith(b"<!doctype html>")
        _, encoding, body = _get(plain.start(), home, accept_gzip=True)
        assert encoding == "" and body.startswith(b"<!doctype html>")
    finally:
        compressed.stop()
        plain.stop()


def test_a_child_that_dies_before_serving_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", "/bin/false")  # a child that exits at once, printing nothing
    served = SimWebProcess(CONFIG, tmp_path / "requests.jsonl")
    with pytest.raises(RuntimeError, match=r"did not start \(exit 1\)"):
        served.start()
    served.stop()


def test_the_command_refuses_a_file_without_a_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bogus = tmp_path / "config"
    bogus.write_bytes(b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00\x8c\x01x\x94.")  # a pickled "x"
    assert main([str(bogus), str(tmp_path / "log.jsonl")]) == 2
    assert "holds no SimWebConfig" in capsys.readouterr().err


def test_sigterm_stops_the_child_cleanly(tmp_path: Path) -> None:
    served = SimWebProcess(CONFIG, tmp_path / "requests.jsonl")
    served.start()
    os.kill(served.pid, signal.SIGTERM)
    assert served._proc is not None and served._proc.wait(20) == 0
    served.stop()


def test_a_served_web_stops_once_the_process_that_started_it_is_gone(tmp_path: Path) -> None:
    starter = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from libs.simweb.process import SimWebProcess\n"
        "from tests.integration.simweb.test_simweb_process import CONFIG\n"
        f"served = SimWebProcess(CONFIG, Path({str(tmp_path / 'orphan.jsonl')!r}))\n"
        "served.start()\n"
        "print(served.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", starter], stdout=subprocess.PIPE, text=True, cwd=REPO)
    assert parent.stdout is not None
    server = int(parent.stdout.readline())
    assert procs.pid_alive(server)
    parent.kill()  # never gets to stop its web
    parent.wait()
    deadline = time.monotonic() + 10
    while procs.pid_alive(server) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not procs.pid_alive(server)
