"""Every exchange archived in gzip WARC 1.1 files: digests, revisits, truncation, rotation, warcio's tools."""

from __future__ import annotations

import gzip
import random
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from warcio.archiveiterator import ArchiveIterator

from services.fetcher.warc.warc_archive import WarcArchive, payload_digest, warc_date
from services.fetcher.warc.warc_process import WarcProcessArchive

PAGE = b"<html><body>" + b"same words " * 300 + b"</body></html>"
NOISE = random.Random(4).randbytes(50_000)  # does not compress: the files really grow


def site() -> web.Application:
    async def page(request: web.Request) -> web.Response:
        return web.Response(body=PAGE, content_type="text/html")

    async def zipped(request: web.Request) -> web.Response:
        return web.Response(body=gzip.compress(b"<p>zipped</p>"), content_type="text/html",
                            headers={"Content-Encoding": "gzip"})

    async def moved(request: web.Request) -> web.Response:
        raise web.HTTPMovedPermanently("/a")

    async def huge(request: web.Request) -> web.Response:
        return web.Response(body=NOISE, content_type="text/html")

    async def noise(request: web.Request) -> web.Response:
        return web.Response(body=random.Random(request.match_info["n"]).randbytes(50_000), content_type="text/html")

    app = web.Application()
    for path, handler in (("/a", page), ("/b", page), ("/z", zipped), ("/moved", moved), ("/huge", huge)):
        app.router.add_get(path, handler)
    app.router.add_get("/noise/{n}", noise)
    return app


def records(folder: Path) -> list[dict[str, Any]]:
    found = []
    for path in sorted(folder.glob("*.warc.gz")):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                found.append({
                    "file": path.name,
                    "type": record.rec_type,
                    "uri": record.rec_headers.get_header("WARC-Target-URI"),
                    "version": record.rec_headers.protocol,
                    "digest": record.rec_headers.get_header("WARC-Payload-Digest"),
                    "truncated": record.rec_headers.get_header("WARC-Truncated"),
                    "refers_to": record.rec_headers.get_header("WARC-Refers-To-Target-URI"),
                    "concurrent_to": record.rec_headers.get_header("WARC-Concurrent-To"),
                    "id": record.rec_headers.get_header("WARC-Record-ID"),
                    "status": record.http_headers.get_statuscode() if record.http_headers else None,
                    "encoding": record.http_headers.get_header("Content-Encoding") if record.http_headers else None,
                    "payload": record.content_stream().read() if record.rec_type == "response" else b"",
                })
    return found


async def test_responses_requests_and_revisits_are_archived(serve, make_fetcher, tmp_path: Path) -> None:
    server = await serve(site())
    archive = WarcArchive(tmp_path, max_file_bytes=1 << 30)
    await archive.start()
    fetcher = await make_fetcher(observer=archive.submit, max_body_bytes=10_000)
    for path in ("/a", "/b", "/z", "/moved", "/huge"):
        await fetcher.fetch(server.url(path))
    await archive.stop()
    assert list(tmp_path.glob("*.open")) == []
    found = records(tmp_path)
    # /moved redirects to /a, whose second capture is a revisit too.
    assert [r["type"] for r in found] == [
        "warcinfo", "response", "request", "revisit", "request", "response", "request",
        "response", "request", "revisit", "request", "response", "request",
    ]
    assert all(r["version"] == "WARC/1.1" for r in found)
    by_uri = {(r["type"], r["uri"]): r for r in reversed(found)}  # the first record of each kind and URI
    first = by_uri[("response", server.url("/a"))]
    assert first["digest"] == payload_digest(PAGE) and first["payload"] == PAGE
    revisit = by_uri[("revisit", server.url("/b"))]
    assert revisit["digest"] == payload_digest(PAGE) and revisit["refers_to"] == server.url("/a")
    zipped = by_uri[("response", server.url("/z"))]
    assert zipped["encoding"] == "gzip" and zipped["payload"] == b"<p>zipped</p>"  # stored as received
    assert by_uri[("response", server.url("/moved"))]["status"] == "301"
    assert by_uri[("response", server.url("/a"))]["truncated"] is None
    assert by_uri[("response", server.url("/huge"))]["truncated"] == "length"
    request = by_uri[("request", server.url("/a"))]
    assert request["concurrent_to"] == first["id"]
    warc = str(next(tmp_path.glob("*.warc.gz")))
    check = subprocess.run([sys.executable, "-m", "warcio.cli", "check", "-v", warc],
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    index = subprocess.run([sys.executable, "-m", "warcio.cli", "index", warc],
                           capture_output=True, text=True, check=True)
    assert index.stdout.count("\n") == len(found)


async def test_files_rotate_past_the_size_limit_and_every_one_is_readable(serve, make_fetcher, tmp_path: Path) -> None:
    server = await serve(site())
    archive = WarcArchive(tmp_path, max_file_bytes=2_000)
    await archive.start()
    fetcher = await make_fetcher(observer=archive.submit, max_body_bytes=100_000)
    for n in range(3):
        await fetcher.fetch(server.url(f"/noise/{n}"))
    await archive.stop()
    files = sorted(tmp_path.glob("*.warc.gz"))
    assert len(files) == 3
    found = records(tmp_path)
    assert [r["type"] for r in found].count("warcinfo") == 3
    payloads = [r["payload"] for r in found if r["type"] == "response"]
    assert payloads == [random.Random(str(n)).randbytes(50_000) for n in range(3)]


def gzip_members(path: Path) -> int:
    data, members = path.read_bytes(), 0
    while data:
        inflater = zlib.decompressobj(31)
        inflater.decompress(data)
        assert inflater.eof
        data, members = inflater.unused_data, members + 1
    return members


async def test_each_record_is_a_gzip_member_of_its_own_at_the_chosen_level(
    serve, make_fetcher, tmp_path: Path
) -> None:
    server = await serve(site())
    sizes = {}
    for level in (1, 9):
        folder = tmp_path / str(level)
        archive = WarcArchive(folder, gzip_level=level)
        await archive.start()
        fetcher = await make_fetcher(observer=archive.submit, max_body_bytes=100_000)
        for path in ("/a", "/z"):
            await fetcher.fetch(server.url(path))
        await archive.stop()
        (file,) = folder.glob("*.warc.gz")
        assert gzip_members(file) == len(records(folder)) == 5  # warcinfo, then a response and a request each
        assert next(r["digest"] for r in records(folder) if r["type"] == "response") == payload_digest(PAGE)
        sizes[level] = file.stat().st_size
    assert sizes[9] < sizes[1]
    with pytest.raises(ValueError, match="gzip_level"):
        WarcArchive(tmp_path, gzip_level=10)


async def test_a_writer_process_writes_the_same_records(serve, make_fetcher, tmp_path: Path) -> None:
    server = await serve(site())
    archive = WarcProcessArchive(tmp_path, queue_records=2, max_file_bytes=1 << 30)  # fetches wait for the child
    await archive.start()
    fetcher = await make_fetcher(observer=archive.submit, max_body_bytes=10_000)
    for path in ("/a", "/b", "/z", "/huge"):
        await fetcher.fetch(server.url(path))
    await archive.stop()
    assert list(tmp_path.glob("*.open")) == []
    found = records(tmp_path)
    assert [r["type"] for r in found] == [
        "warcinfo", "response", "request", "revisit", "request", "response", "request", "response", "request"]
    assert found[1]["payload"] == PAGE and found[3]["refers_to"] == server.url("/a")
    assert found[7]["truncated"] == "length"


def test_warc_date_is_the_w3c_form_that_indexers_read() -> None:
    from warcio.timeutils import iso_date_to_datetime

    assert warc_date(1795765083.214577) == "2026-11-27T07:38:03.214577Z"
    assert warc_date(1795765083.0) == "2026-11-27T07:38:03Z"
    assert iso_date_to_datetime(warc_date(1795765083.214577)).microsecond == 214577


async def test_a_304_to_a_revisit_is_a_server_not_modified_revisit_record(serve, make_fetcher, tmp_path: Path) -> None:
    from services.fetcher.http.revisit_validators import Validators
    from services.fetcher.warc.warc_archive import NOT_MODIFIED_PROFILE

    async def page(request: web.Request) -> web.Response:
        if request.headers.get("If-None-Match") == '"v1"':
            return web.Response(status=304, headers={"ETag": '"v1"'})
        return web.Response(status=304, headers={"ETag": '"v1"'})  # wrongly, to an unconditional request too

    app = web.Application()
    app.router.add_get("/page", page)
    server = await serve(app)
    archive = WarcArchive(tmp_path)
    await archive.start()
    fetcher = await make_fetcher(observer=archive.submit)
    captured_at = 1_772_445_600.0  # 2026-03-02T10:00:00Z
    await fetcher.fetch(server.url("/page"), validators=Validators('"v1"', "", captured_at))
    await fetcher.fetch(server.url("/page"))
    await archive.stop()
    warc = next(tmp_path.glob("*.warc.gz"))
    with warc.open("rb") as stream:
        found = [(r.rec_type, r.rec_headers, r.http_headers, r.content_stream().read())
                 for r in ArchiveIterator(stream)]
    assert [kind for kind, *_ in found] == ["warcinfo", "revisit", "request", "response", "request"]
    _, headers, http, payload = found[1]
    assert headers.get_header("WARC-Profile") == NOT_MODIFIED_PROFILE
    assert headers.get_header("WARC-Refers-To-Target-URI") == server.url("/page")
    assert headers.get_header("WARC-Refers-To-Date") == "2026-03-02T10:00:00Z"
    assert http.get_statuscode() == "304" and http.get_header("ETag") == '"v1"' and payload == b""
    assert found[2][2].get_header("If-None-Match") == '"v1"'  # the request record shows what was sent
    assert found[3][1].get_header("WARC-Profile") is None  # the unsolicited 304 is archived as it came
    check = subprocess.run([sys.executable, "-m", "warcio.cli", "check", "-v", str(warc)],
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
