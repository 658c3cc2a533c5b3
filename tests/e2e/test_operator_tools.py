"""Operators' own tools accept what a crawl exports and archives.

One crawl of a small simulated web on the real broker and database, every service's metrics
endpoint on loopback, the fetcher writing WARC files. While it runs, a real Prometheus
(Debian's ``prometheus`` package, started here and stopped at the end) scrapes the six
exporters every second, and ``promtool check metrics`` reads each exporter once. Then:
every expression of the Grafana dashboard evaluates, with data, at a moment of the crawl;
"services up" reads 0 for a stopped service; and the WARC files pass ``warcio check``, are
indexed by ``cdxj-indexer`` and replayed by pywb, exactly as docs/operations.md
("Operators' tools") tells an operator to.

Prometheus's binaries and the WARC tools (``.venv/operator-tools``) are installed by
``scripts/bootstrap.sh``; without them the tests are skipped, saying so, except under ``scripts/test.sh``
(``OPERATOR_TOOLS_REQUIRED=1``, set once bootstrap.sh has installed them), where they fail.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from warcio.archiveiterator import ArchiveIterator

from cli.stack.layout import SERVICES
from libs.localinfra.ports import free_port
from tests.e2e.crawl_harness import CrawlStack, crawl_stack

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "trawl-dashboard.json"
TOOLS = ROOT / ".venv" / "operator-tools" / "bin"
OPERATIONS = ROOT / "docs" / "operations.md"
RATE_INTERVAL = "20s"  # Grafana's $__rate_interval for a 1 s scrape: at least four scrapes


def tool(name: str, where: Path | None = None) -> str:
    found = shutil.which(name, path=str(where) if where else None)
    if found is None:
        origin = f"{where} (bash scripts/bootstrap.sh makes it)" if where else "PATH: Debian's prometheus package"
        if os.environ.get("OPERATOR_TOOLS_REQUIRED") == "1":  # scripts/test.sh, after bootstrap.sh installed them
            pytest.fail(f"{name} is not installed in {origin}")
        pytest.skip(f"{name} is not installed in {origin}")
    return found


def scrape_config(ports: list[int]) -> str:
    """docs/operations.md's Prometheus configuration for the local stack, on these ports, scraped every second."""
    text = OPERATIONS.read_text().split("## Operators' tools", 1)[1]
    config = yaml.safe_load(text.split("```yaml\n", 1)[1].split("```", 1)[0])
    config["global"] = {"scrape_interval": "1s", "scrape_timeout": "1s"}
    (job,) = config["scrape_configs"]
    (targets,) = job["static_configs"]
    assert len(targets["targets"]) == len(ports) and "labels" not in targets
    targets["targets"] = [f"127.0.0.1:{port}" for port in ports]
    return yaml.safe_dump(config)


def http_get(url: str, timeout: float = 10.0) -> tuple[bytes, dict[str, str]]:
    with urllib.request.urlopen(url, timeout=timeout) as reply:
        return reply.read(), {k.lower(): v for k, v in reply.headers.items()}


def wait_for(url: str, process: subprocess.Popen[bytes], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            http_get(url, timeout=2)
            return
        except OSError:
            assert process.poll() is None, f"{what} exited with {process.returncode}"
            assert time.monotonic() < deadline, f"{what} did not answer {url} within {timeout:g} s"
            time.sleep(0.2)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class OperatedCrawl:
    stack: CrawlStack
    prometheus: str  # http://127.0.0.1:PORT
    warc_dir: Path
    work: Path
    promtool: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)
    active_at: float = 0.0  # a moment of the crawl, while pages were being fetched

    def query(self, expr: str, at: float | None = None) -> dict[str, Any]:
        params = {"query": expr, **({"time": f"{at:.3f}"} if at is not None else {})}
        body, _ = http_get(f"{self.prometheus}/api/v1/query?{urllib.parse.urlencode(params)}")
        reply: dict[str, Any] = json.loads(body)
        return reply


@pytest.fixture(scope="module")
def operated(kafka_bootstrap: str, pg_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatedCrawl]:
    from tests.conftest import make_unique_name

    prometheus, promtool = tool("prometheus"), tool("promtool")
    work = tmp_path_factory.mktemp("operator")
    ports = {name: free_port() for name in SERVICES}
    (work / "prometheus.yml").write_text(scrape_config(list(ports.values())))
    checked = subprocess.run([promtool, "check", "config", str(work / "prometheus.yml")], capture_output=True,
                             text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    web_port = free_port()
    server = subprocess.Popen(
        [prometheus, f"--config.file={work / 'prometheus.yml'}", f"--storage.tsdb.path={work / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{web_port}", "--log.level=warn"],
        stdout=(work / "prometheus.log").open("wb"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
    )
    try:
        wait_for(f"http://127.0.0.1:{web_port}/-/ready", server, "prometheus")
        prefix = make_unique_name("ops") + "."
        with crawl_stack(kafka_bootstrap, pg_dsn, prefix, work / "logs") as (stack, _simweb, web):
            for name, process in stack.processes.items():
                process.env.update({"TRAWL_METRICS_PORT": str(ports[name]),
                                    "TRAWL_KAFKA_LAG_METRICS_INTERVAL_MS": "1000"})
            stack.processes["fetcher"].env["TRAWL_FETCHER_WARC_DIR"] = str(work / "warc")
            crawl = OperatedCrawl(stack, f"http://127.0.0.1:{web_port}", work / "warc", work)
            stack.start()
            with stack.admin() as admin:
                admin.add_seeds(web.home_pages())
            crawl.active_at = crawl_while_checking(crawl, ports, promtool)
            yield crawl
    finally:
        stop(server)


def crawl_while_checking(crawl: OperatedCrawl, ports: dict[str, int], promtool: str) -> float:
    """Waits for the crawl's end, running promtool on every exporter once pages are being fetched.

    Returns a moment halfway between the first fetched page and the last poll that found work left.
    """
    first = last = 0.0
    with crawl.stack.admin() as admin:
        deadline = time.monotonic() + 240
        idle_since: float | None = None
        while True:
            stats = admin.stats()
            busy = stats["frontier"].get("queued", 0) + stats["in_flight"]
            if stats["fetched"] > 0 and busy > 0:
                first, last = first or time.time(), time.time()
                if stats["fetched"] >= 20 and not crawl.promtool:
                    for name, port in ports.items():
                        text, _ = http_get(f"http://127.0.0.1:{port}/metrics")
                        crawl.promtool[name] = subprocess.run(
                            [promtool, "check", "metrics"], input=text.decode(), capture_output=True, text=True,
                            timeout=60,
                        )
            idle_since = (idle_since or time.monotonic()) if busy == 0 and stats["fetched"] > 0 else None
            if idle_since is not None and time.monotonic() - idle_since >= 3:
                break
            assert time.monotonic() < deadline, f"crawl not done within 240 s: {stats}"
            time.sleep(0.25)
    assert crawl.promtool, "the crawl ended before promtool could read the exporters"
    time.sleep(2)  # the last scrapes of the crawl
    return (first + last) / 2


def dashboard_expressions() -> list[tuple[str, str]]:
    """(panel title, expression) of every query of the dashboard, Grafana's variables filled in."""
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [(p["title"], t["expr"].replace("$__rate_interval", RATE_INTERVAL))
            for p in panels for t in p.get("targets", [])]


# -- Prometheus -------------------------------------------------------------------------------------


def test_promtool_finds_every_exporter_clean(operated: OperatedCrawl) -> None:
    assert sorted(operated.promtool) == sorted(SERVICES)
    for name, result in operated.promtool.items():
        assert (result.returncode, result.stdout + result.stderr) == (0, ""), name


def test_prometheus_scraped_every_service(operated: OperatedCrawl) -> None:
    reply = operated.query('up{job="trawl"}', at=operated.active_at)
    assert [s["value"][1] for s in reply["data"]["result"]] == ["1"] * len(SERVICES), reply


def test_promtool_queries_the_scraping_prometheus(operated: OperatedCrawl) -> None:
    done = subprocess.run([tool("promtool"), "query", "instant", operated.prometheus,
                           "sum by (service) (trawl_consumer_lag)"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    series = {line.split(" => ")[0] for line in done.stdout.splitlines()}  # {service="fetcher"} => 0 @[...]
    assert {f'{{service="{name}"}}' for name in SERVICES} <= series, done.stdout


def test_every_dashboard_expression_evaluates_with_data_during_the_crawl(operated: OperatedCrawl) -> None:
    expressions = dashboard_expressions()
    assert len(expressions) >= 40
    failures = []
    for title, expr in expressions:
        reply = operated.query(expr, at=operated.active_at)
        if reply.get("status") != "success" or reply.get("warnings"):
            failures.append(f"{title}: {expr}: {reply.get('error') or reply.get('warnings')}")
        elif not reply["data"]["result"]:
            failures.append(f"{title}: {expr}: no data")
    assert not failures, "\n".join(failures)


@pytest.fixture(scope="module")
def fetcher_stopped(operated: OperatedCrawl) -> float:
    """Stops the fetcher (closing its WARC file); returns when Prometheus has found it gone."""
    assert operated.stack.processes["fetcher"].stop(timeout=60) == 0
    deadline = time.monotonic() + 30
    while operated.query('up{job="trawl"} == 0')["data"]["result"] == []:
        assert time.monotonic() < deadline, "Prometheus never saw the fetcher down"
        time.sleep(0.5)
    return time.time()


def test_services_up_reads_zero_for_a_stopped_service(operated: OperatedCrawl, fetcher_stopped: float) -> None:
    (expr,) = [expr for title, expr in dashboard_expressions() if title == "Services up"]
    result = operated.query(expr)["data"]["result"]
    up = {s["metric"]["service"]: float(s["value"][1]) for s in result}
    assert up == {name: 0.0 if name == "fetcher" else 1.0 for name in SERVICES}


# -- WARC -------------------------------------------------------------------------------------------


def run(command: list[str], cwd: Path) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{' '.join(command)}: {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def archived_page(warcs: list[Path]) -> tuple[str, str, bytes]:
    """(URL, 14-digit timestamp, body) of the first archived HTML page answered 200."""
    for path in warcs:
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                headers = record.http_headers
                if (record.rec_type == "response" and headers.get_statuscode() == "200"
                        and "html" in (headers.get_header("Content-Type") or "")):
                    date = record.rec_headers.get_header("WARC-Date")
                    stamp = "".join(c for c in date if c.isdigit())[:14]
                    return record.rec_headers.get_header("WARC-Target-URI"), stamp, record.content_stream().read()
    raise AssertionError("no HTML page answered 200 in the WARC files")


def decoded(body: bytes, headers: dict[str, str]) -> bytes:
    coding = headers.get("content-encoding", "").lower()
    if coding in ("gzip", "x-gzip"):
        return gzip.decompress(body)
    if coding == "deflate":
        return zlib.decompress(body)
    return body


def test_warc_files_pass_check_index_and_replay(operated: OperatedCrawl, fetcher_stopped: float) -> None:
    warcio, indexer = tool("warcio", TOOLS), tool("cdxj-indexer", TOOLS)
    wb_manager, wayback = tool("wb-manager", TOOLS), tool("wayback", TOOLS)
    warc_dir, work = operated.warc_dir, operated.work
    assert not list(warc_dir.glob("*.open")), "a WARC file was left open"
    warcs = sorted(warc_dir.glob("*.warc.gz"))
    assert warcs

    run([warcio, "check", "-v", *map(str, warcs)], work)
    run([indexer, "--sort", "--dir-root", str(warc_dir), "-o", str(work / "trawl.cdxj"), *map(str, warcs)], work)
    index = [json.loads(line.split(" ", 2)[2]) for line in (work / "trawl.cdxj").read_text().splitlines()]
    url, stamp, body = archived_page(warcs)
    assert {"url": url, "status": "200"}.items() <= next(e for e in index if e["url"] == url).items()

    replay = work / "replay"
    replay.mkdir()
    run([wb_manager, "init", "trawl"], replay)
    for warc in warcs:
        shutil.copy(warc, replay / "collections" / "trawl" / "archive")
    shutil.copy(work / "trawl.cdxj", replay / "collections" / "trawl" / "indexes" / "index.cdxj")
    run([wb_manager, "init", "trawl-added"], replay)
    run([wb_manager, "add", "trawl-added", *map(str, warcs)], replay)

    port = free_port()
    server = subprocess.Popen([wayback, "--bind", "127.0.0.1", "--port", str(port)], cwd=replay,
                              stdout=(work / "wayback.log").open("wb"), stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL)
    try:
        wait_for(f"http://127.0.0.1:{port}/", server, "wayback")
        for collection in ("trawl", "trawl-added"):
            served, headers = http_get(f"http://127.0.0.1:{port}/{collection}/{stamp}id_/{url}")
            assert decoded(served, headers) == body, collection
        browsable, headers = http_get(f"http://127.0.0.1:{port}/trawl/{url}")  # the latest capture, rewritten
        assert headers["content-type"].startswith("text/html") and b"<html" in decoded(browsable, headers).lower()
    finally:
        stop(server)
