"""Hostile hosts of the simulated web: each misbehaves in one way a crawler must survive.

Every host below ``HOSTILE_DOMAIN`` plays one part (:data:`HOSTILE_HOSTS` says
which); its robots.txt answers 404 (everything allowed) unless the part is
about robots.txt or sitemaps. A crawler must end each with bounded time and memory and a
clear, recorded outcome:

========================  ==================================================
host                      behaviour
========================  ==================================================
slow-drip                 ``/slow``: 10 bytes every 0.5 s; ``/steady``: 10 KB/s, forever
huge                      an endless HTML body
bomb                      a gzip body that inflates to 256 MiB of zeros
redirect-loop             ``/a`` -> ``/b`` -> ``/a``
redirect-chain            ``/N`` redirects to ``/N-1``; ``/0`` is a page; ``/moved`` redirects to
                          ``/1?utm_source=feed`` on the host written in capitals
bad-charset               ``/invalid`` (bytes invalid in the declared UTF-8), ``/mixed``
                          (header Latin-1, meta UTF-8, both kinds of bytes), ``/unknown``
types                     ``/doc.pdf``, ``/image.png``, ``/data.json``, ``/untyped``
reset                     ``/mid-body``: half a body, then a TCP reset; ``/at-once``: reset, no answer
malformed                 ``/header-line`` (a line that is no header), ``/status-line``
busy                      503 with ``Retry-After: 2``
rate-limited              429 with ``Retry-After: 2``
failing                   500, always
no-such-host              never resolves (behind a proxy: 502, as a proxy answers)
robots-huge               a 600 KiB robots.txt: ``/early/`` disallowed at the top, ``/late/`` past 500 KiB
robots-redirect           robots.txt reached after 5 redirects (followed): ``/private/`` disallowed
robots-redirect-6         robots.txt after 6 redirects (too many: everything allowed)
robots-500                robots.txt answers 500 (everything disallowed for a while)
robots-sitemap            robots.txt lists ``/sitemap.xml``, which lists ``/s/1`` .. ``/s/5`` and
                          ``/s/6?utm_source=sitemap`` on the host written in capitals
x-robots                  pages with two ``X-Robots-Tag`` headers
ssrf                      redirects to ``http://169.254.169.254/latest/meta-data/``, or to ``?to=URL``
tls                       served only over HTTPS with a self-signed certificate (see ``tls.py``)
stall                     ``/after-headers``: headers, then silence; ``/before-headers``: silence
lying-length              ``Content-Length`` of 10 GB, 20 bytes sent, then the connection closed
long-header               ``/header``: a 1 MiB header line; ``/location``: a redirect to a 1 MiB URL
redirect-odd              ``/self`` -> itself, ``/ftp`` -> ``ftp://``, ``/js`` -> ``javascript:``,
                          ``/no-location``: a 302 without ``Location``
robots-binary             robots.txt is 64 KiB of random bytes
robots-garbage            robots.txt of garbage lines, ``Disallow: /secret/`` and ``Disallow /open`` among them
robots-loop               robots.txt redirects to itself through ``/robots-again.txt``
early-hints               ``/``: ``103 Early Hints`` responses, endlessly; ``/few``: three, then a page
========================  ==================================================

The bomb host also serves ``/deflate`` (a deflate bomb), ``/nested`` (gzip inside gzip,
declared once) and ``/stacked`` (``Content-Encoding: gzip, gzip``); ``types`` also serves
``/fake.html`` (PNG bytes declared as HTML), ``/noise.html`` (3 MiB of random bytes declared as
HTML), ``/bom-noise.html`` (1 MiB of them behind a UTF-16 byte order mark) and ``/plain.txt``.
Hosts whose pages are hostile as HTML (traps, malformed markup, megabyte attributes, IDN homographs, floods of
links and copies) are in :mod:`libs.simweb.hostile_pages`; hosts whose sitemaps are bombs in
:mod:`libs.simweb.hostile_sitemaps`.
"""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import struct
import zlib
from dataclasses import dataclass
from functools import cache

from aiohttp import web

from libs.simweb.hostile_pages import PAGE_PARTS, hostile_page
from libs.simweb.hostile_sitemaps import SITEMAP_PARTS, hostile_sitemap

logger = logging.getLogger(__name__)

__all__ = ["HOSTILE_DOMAIN", "HOSTILE_HOSTS", "HostileAnswer", "HostileWeb", "hostile_host"]

HOSTILE_DOMAIN = "hostile.test"
HOSTILE_HOSTS = (
    "slow-drip", "huge", "bomb", "redirect-loop", "redirect-chain", "bad-charset", "types", "reset",
    "malformed", "busy", "rate-limited", "failing", "no-such-host", "robots-huge", "robots-redirect",
    "robots-redirect-6", "robots-500", "robots-sitemap", "x-robots", "ssrf", "tls", "stall", "lying-length",
    "long-header", "redirect-odd", "robots-binary", "robots-garbage", "robots-loop", "early-hints", *PAGE_PARTS,
    *SITEMAP_PARTS,
)
LONG_BYTES = 1024 * 1024
BOMB_DECODED_BYTES = 256 * 1024 * 1024
EARLY_HINT = b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n"
_HTML = "text/html"


def hostile_host(part: str) -> str:
    """The host name playing ``part`` (one of :data:`HOSTILE_HOSTS`)."""
    if part not in HOSTILE_HOSTS:
        raise ValueError(f"no hostile host plays {part!r}")
    return f"{part}.{HOSTILE_DOMAIN}"


@dataclass(frozen=True)
class HostileAnswer:
    """What was answered: the status to log, and the response (None when the connection was cut instead)."""

    status: int
    response: web.StreamResponse | None


@cache
def _bomb(wbits: int = 31) -> bytes:
    """The gzip (``wbits`` 31) or deflate (15) body, built once from 1 MiB blocks (the 256 MiB are
    never in memory here either)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, wbits)
    block = bytes(1024 * 1024)
    parts = [compressor.compress(block) for _ in range(BOMB_DECODED_BYTES // len(block))]
    return b"".join([*parts, compressor.flush()])


@cache
def _noise() -> bytes:
    """3 MiB of random bytes: no compression makes them fit a message."""
    return random.Random(7).randbytes(3 * 1024 * 1024)


def _bomb_answer(path: str) -> tuple[bytes, str]:
    """The body and Content-Encoding of the bomb at ``path``."""
    if path == "/deflate":
        return _bomb(15), "deflate"
    if path in ("/nested", "/stacked"):
        outer = zlib.compressobj(9, zlib.DEFLATED, 31)
        return outer.compress(_bomb()) + outer.flush(), "gzip" if path == "/nested" else "gzip, gzip"
    return _bomb(), "gzip"


def _page(text: str) -> web.Response:
    return web.Response(text=f"<!doctype html><title>{text}</title><p>{text}</p>\n", content_type=_HTML)


class HostileWeb:
    """Answers requests to hostile hosts; the server asks :meth:`serves` first."""

    def prepare(self) -> None:
        """Builds the big bodies now (the bombs take seconds), so that no request waits for them."""
        for path in ("/", "/deflate", "/nested"):
            _bomb_answer(path)
        _noise()

    def serves(self, host: str) -> bool:
        return host.endswith("." + HOSTILE_DOMAIN) and host[: -len(HOSTILE_DOMAIN) - 1] in HOSTILE_HOSTS

    async def respond(self, request: web.Request, host: str) -> HostileAnswer:
        part = host[: -len(HOSTILE_DOMAIN) - 1]
        path = request.rel_url.path
        if part in SITEMAP_PARTS:  # a bomb takes a moment to build the first time
            origin = f"{request.scheme}://{request.host}"
            sitemap = await asyncio.get_running_loop().run_in_executor(None, hostile_sitemap, part, origin, path)
            return HostileAnswer(sitemap.status, sitemap)
        if path == "/robots.txt" and not part.startswith("robots-"):
            return HostileAnswer(404, web.Response(status=404, text="no robots.txt\n"))
        if part in PAGE_PARTS:
            page = hostile_page(part, path)
            return HostileAnswer(page.status, page)
        handler = getattr(self, "_" + part.replace("-", "_"))
        answer: HostileAnswer = await handler(request, path)
        return answer

    # one method per part ---------------------------------------------------------------------

    async def _slow_drip(self, request: web.Request, path: str) -> HostileAnswer:
        size, pause = (10, 0.5) if path == "/slow" else (1000, 0.1)
        response = web.StreamResponse(headers={"Content-Type": _HTML})
        await response.prepare(request)
        try:
            for _ in range(6000):
                await response.write(b"<p>" + b"d" * max(0, size - 3))
                await asyncio.sleep(pause)
        except (ConnectionError, RuntimeError):
            pass  # the client gave up, as it should
        return HostileAnswer(200, response)

    async def _huge(self, request: web.Request, path: str) -> HostileAnswer:
        response = web.StreamResponse(headers={"Content-Type": _HTML})
        await response.prepare(request)
        chunk = b"<p>" + b"h" * 65_000 + b"</p>\n"
        try:
            for _ in range(16_000):  # about 1 GiB at most
                await response.write(chunk)
        except (ConnectionError, RuntimeError):
            pass
        return HostileAnswer(200, response)

    async def _bomb(self, request: web.Request, path: str) -> HostileAnswer:
        body, coding = await asyncio.get_running_loop().run_in_executor(None, _bomb_answer, path)
        return HostileAnswer(200, web.Response(body=body, headers={"Content-Type": _HTML, "Content-Encoding": coding}))

    async def _redirect_loop(self, request: web.Request, path: str) -> HostileAnswer:
        return HostileAnswer(302, web.Response(status=302, headers={"Location": "/b" if path == "/a" else "/a"}))

    async def _redirect_chain(self, request: web.Request, path: str) -> HostileAnswer:
        step = path.strip("/")
        if step == "moved":  # an absolute target, not in normal form
            target = f"{request.scheme}://{request.host.upper()}/1?utm_source=feed"
            return HostileAnswer(301, web.Response(status=301, headers={"Location": target}))
        if not step.isdigit() or int(step) == 0:
            return HostileAnswer(200, _page("end of the chain"))
        return HostileAnswer(301, web.Response(status=301, headers={"Location": f"/{int(step) - 1}"}))

    async def _bad_charset(self, request: web.Request, path: str) -> HostileAnswer:
        if path == "/invalid":
            body, ctype = b"<p>caf\xc3\xa9 \xff\xfe\xc3 broken \xed\xa0\x80 utf-8</p>", "text/html; charset=utf-8"
        elif path == "/mixed":
            body = ('<meta charset="utf-8"><p>caf\u00e9 '.encode() + "na\u00efve".encode("latin-1") + b"</p>")
            ctype = "text/html; charset=iso-8859-1"
        else:
            body, ctype = b"<p>plain words</p>", "text/html; charset=x-no-such-charset"
        return HostileAnswer(200, web.Response(body=body, headers={"Content-Type": ctype}))

    async def _types(self, request: web.Request, path: str) -> HostileAnswer:
        kinds = {
            "/doc.pdf": ("application/pdf", b"%PDF-1.4\n" + b"0" * 20_000),
            "/image.png": ("image/png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 20_000),
            "/data.json": ("application/json", b'{"not": "html"}'),
            "/fake.html": (_HTML, b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 80),
            "/plain.txt": ("text/plain", b"plain text, no markup, no links: http://elsewhere.test/\n"),
            "/noise.html": (_HTML, _noise()),
            "/bom-noise.html": (_HTML, b"\xff\xfe" + _noise()[:1024 * 1024]),
        }
        if path in kinds:
            ctype, body = kinds[path]
            return HostileAnswer(200, web.Response(body=body, headers={"Content-Type": ctype}))
        transport = request.transport  # aiohttp would add a Content-Type: write the answer by hand
        if transport is not None:
            body = b"\x00\x01binary without a type"
            transport.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
            transport.close()
        return HostileAnswer(200, None)

    async def _reset(self, request: web.Request, path: str) -> HostileAnswer:
        transport = request.transport
        if transport is None:
            return HostileAnswer(0, None)
        if path == "/mid-body":
            transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n<p>half")
            await asyncio.sleep(0.05)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with RST
        transport.abort()
        return HostileAnswer(200 if path == "/mid-body" else 0, None)

    async def _malformed(self, request: web.Request, path: str) -> HostileAnswer:
        transport = request.transport
        if transport is None:
            return HostileAnswer(0, None)
        if path == "/status-line":
            transport.write(b"HTTP/1.1 two hundred OK\r\nContent-Length: 2\r\n\r\nhi")
        else:
            transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nThis is no header\r\n"
                            b"Content-Length: 5\r\n\r\nhello")
        transport.close()
        return HostileAnswer(200, None)

    async def _busy(self, request: web.Request, path: str) -> HostileAnswer:
        return HostileAnswer(503, web.Response(status=503, text="busy\n", headers={"Retry-After": "2"}))

    async def _rate_limited(self, request: web.Request, path: str) -> HostileAnswer:
        return HostileAnswer(429, web.Response(status=429, text="slow down\n", headers={"Retry-After": "2"}))

    async def _failing(self, request: web.Request, path: str) -> HostileAnswer:
        return HostileAnswer(500, web.Response(status=500, text="broken\n"))

    async def _no_such_host(self, request: web.Request, path: str) -> HostileAnswer:
        return HostileAnswer(502, web.Response(status=502, text="proxy: cannot resolve host\n"))

    async def _robots_huge(self, request: web.Request, path: str) -> HostileAnswer:
        if path != "/robots.txt":
            return HostileAnswer(200, _page(path))
        filler = "".join(f"# line {i:06d} of padding to make this file large\n" for i in range(12_000))
        text = "User-agent: *\nDisallow: /early/\n" + filler + "Disallow: /late/\n"
        return HostileAnswer(200, web.Response(text=text, content_type="text/plain"))

    async def _robots_redirect(self, request: web.Request, path: str) -> HostileAnswer:
        return self._robots_hops(path, 5)

    async def _robots_redirect_6(self, request: web.Request, path: str) -> HostileAnswer:
        return self._robots_hops(path, 6)

    @staticmethod
    def _robots_hops(path: str, hops: int) -> HostileAnswer:
        if path == "/robots.txt":
            return HostileAnswer(301, web.Response(status=301, headers={"Location": "/hop/1"}))
        if path.startswith("/hop/"):
            step = int(path.rsplit("/", 1)[1])
            target = f"/hop/{step + 1}" if step < hops - 1 else "/real-robots.txt"
            return HostileAnswer(301, web.Response(status=301, headers={"Location": target}))
        if path == "/real-robots.txt":
            text = "User-agent: *\nDisallow: /private/\n"
            return HostileAnswer(200, web.Response(text=text, content_type="text/plain"))
        return HostileAnswer(200, _page(path))

    async def _robots_500(self, request: web.Request, path: str) -> HostileAnswer:
        if path == "/robots.txt":
            return HostileAnswer(500, web.Response(status=500, text="broken\n"))
        return HostileAnswer(200, _page(path))

    async def _robots_sitemap(self, request: web.Request, path: str) -> HostileAnswer:
        origin = f"{request.scheme}://{request.host}"  # with the port the request used (host-map mode)
        if path == "/robots.txt":
            text = f"User-agent: *\nDisallow:\nSitemap: {origin}/sitemap.xml\n"
            return HostileAnswer(200, web.Response(text=text, content_type="text/plain"))
        if path == "/sitemap.xml":
            urls = "".join(f"<url><loc>{origin}/s/{i}</loc></url>" for i in range(1, 6))
            urls += f"<url><loc>{origin.upper()}/s/6?utm_source=sitemap</loc></url>"  # not in normal form
            body = f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
            return HostileAnswer(200, web.Response(text=body, content_type="application/xml"))
        return HostileAnswer(200, _page(path))

    async def _x_robots(self, request: web.Request, path: str) -> HostileAnswer:
        response = _page(path)
        response.headers.add("X-Robots-Tag", "noindex")
        response.headers.add("X-Robots-Tag", "nofollow")
        return HostileAnswer(200, response)

    async def _ssrf(self, request: web.Request, path: str) -> HostileAnswer:
        location = request.query.get("to", "http://169.254.169.254/latest/meta-data/")  # an open redirect
        return HostileAnswer(302, web.Response(status=302, headers={"Location": location}))

    async def _tls(self, request: web.Request, path: str) -> HostileAnswer:
        return HostileAnswer(200, _page("only over https, with a certificate nobody signed"))

    async def _stall(self, request: web.Request, path: str) -> HostileAnswer:
        response = web.StreamResponse(headers={"Content-Type": _HTML})
        if path == "/after-headers":
            await response.prepare(request)
        for _ in range(120):  # a minute, or until the client gave up (so that the server can stop)
            if request.transport is None or request.transport.is_closing():
                break
            await asyncio.sleep(0.5)
        return HostileAnswer(200, response if path == "/after-headers" else _page("too late"))

    async def _lying_length(self, request: web.Request, path: str) -> HostileAnswer:
        transport = request.transport
        if transport is not None:
            transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 10000000000\r\n\r\n"
                            b"<p>20 bytes, no more")
            await asyncio.sleep(0.05)
            transport.close()
        return HostileAnswer(200, None)

    async def _long_header(self, request: web.Request, path: str) -> HostileAnswer:
        if path == "/location":
            return HostileAnswer(302, web.Response(status=302, headers={"Location": "/" + "l" * LONG_BYTES}))
        return HostileAnswer(200, web.Response(text="<p>long header</p>", content_type="text/html",
                                               headers={"X-Long": "h" * LONG_BYTES}))

    async def _redirect_odd(self, request: web.Request, path: str) -> HostileAnswer:
        targets = {"/self": "/self", "/ftp": "ftp://files.hostile.test/x", "/js": "javascript:alert(1)"}
        if path in targets:
            return HostileAnswer(302, web.Response(status=302, headers={"Location": targets[path]}))
        return HostileAnswer(302, web.Response(status=302, text="found, but where?\n"))

    async def _robots_binary(self, request: web.Request, path: str) -> HostileAnswer:
        if path != "/robots.txt":
            return HostileAnswer(200, _page(path))
        body = bytes((i * 7919 + 13) % 256 for i in range(64 * 1024))
        return HostileAnswer(200, web.Response(body=body, content_type="application/octet-stream"))

    async def _robots_garbage(self, request: web.Request, path: str) -> HostileAnswer:
        if path != "/robots.txt":
            return HostileAnswer(200, _page(path))
        text = ("<html><body>Not a robots.txt</body></html>\nUser agent *\nDisallow /open\n:::\n"
                "Crawl-delay: soon\nUser-agent: *\n\x00\x01garbage\nDisallow: /secret/\nAllow\n"
                "Sitemap: not a url\n" + "=" * 5000 + "\n")
        return HostileAnswer(200, web.Response(text=text, content_type="text/plain"))

    async def _robots_loop(self, request: web.Request, path: str) -> HostileAnswer:
        if path in ("/robots.txt", "/robots-again.txt"):
            target = "/robots-again.txt" if path == "/robots.txt" else "/robots.txt"
            return HostileAnswer(301, web.Response(status=301, headers={"Location": target}))
        return HostileAnswer(200, _page(path))

    async def _early_hints(self, request: web.Request, path: str) -> HostileAnswer:
        transport = request.transport
        if transport is None:
            return HostileAnswer(0, None)
        if path == "/few":
            page = b"<!doctype html><title>hinted</title><p>a page after three early hints</p>\n"
            transport.write(EARLY_HINT * 3 + b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(page), page))
            transport.close()
            return HostileAnswer(200, None)
        hints = EARLY_HINT * 64
        for _ in range(1_000_000):  # until the client gives up (about 4 GB at most)
            if transport.is_closing():
                break
            if transport.get_write_buffer_size() > 256 * 1024:  # the client reads no faster: wait for it
                await asyncio.sleep(0.001)
                continue
            transport.write(hints)
            await asyncio.sleep(0)
        transport.close()
        return HostileAnswer(103, None)
