"""The extractor's HTML corpus: realistic pages made by the project, each with what must come out.

Every page ``pages/<name>.html`` (bytes as a server would send them, in the charset the case is
about) has a ``pages/<name>.yaml`` beside it: the URL it was fetched from, the response headers,
and the expectations (see ``tests/unit/extractor/test_extractor_corpus.py``). Pages too big or
too binary to keep as files are generated here, deterministically (``generated: <name>``).
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from libs.common.urls import url_host
from libs.common.wire import messages as pb

PAGES = Path(__file__).parent / "pages"
FETCHED_AT = datetime(2025, 6, 15, 10, 0, tzinfo=UTC)


@dataclass(frozen=True)
class CorpusCase:
    name: str
    url: str
    body: bytes
    headers: dict[str, str]
    expect: dict[str, Any]
    final_url: str = ""
    depth: int = 1
    fetched_at: datetime = FETCHED_AT

    @property
    def content_type(self) -> str:
        return self.headers.get("Content-Type", "text/html")

    def fetch_result(self) -> pb.FetchResult:
        """The fetch result the fetcher would publish for this page (body compressed with zlib)."""
        return pb.FetchResult(
            request_id=f"corpus-{self.name}",
            url=self.url,
            final_url=self.final_url or self.url,
            host=url_host(self.url),
            status=pb.FETCH_STATUS_OK,
            http_status=200,
            headers=[pb.Header(name=k, value=v) for k, v in self.headers.items() if k != "X-Robots-Tag"],
            body=zlib.compress(self.body),
            body_codec="zlib",
            body_size=len(self.body),
            fetched_at_ms=int(self.fetched_at.timestamp() * 1000),
            content_type=self.content_type,
            depth=self.depth,
            x_robots_tag=self.headers.get("X-Robots-Tag", ""),
        )


def _huge_link_index(rng: random.Random) -> bytes:
    """A site's A-Z index with 6,000 entries, more links than the extractor keeps (5,000)."""
    words = ["harbour", "lighthouse", "market", "chapel", "school", "bridge", "mill", "quay", "garden", "station"]
    rows = []
    for i in range(6000):
        name = f"{rng.choice(words).title()} {rng.choice(words)} {i}"
        rows.append(f'<li><a href="/places/{i:05d}-{name.split()[1]}.html">{name}</a></li>')
    body = "\n".join(rows)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Places A-Z | Shore Guide</title>'
        "</head><body><h1>Places A to Z</h1><p>Every place in the guide, in alphabetical order.</p>"
        f'<ul class="index">\n{body}\n</ul><p><a href="/about">About the guide</a></p></body></html>'
    ).encode()


def _binary_garbage(rng: random.Random) -> bytes:
    """Bytes that are no text at all, served as HTML (a misconfigured server, a truncated image)."""
    return bytes(rng.randrange(256) for _ in range(30_000))


_GENERATORS = {"huge_link_index": _huge_link_index, "binary_garbage": _binary_garbage}


def load_case(spec_path: Path) -> CorpusCase:
    spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    name = spec_path.stem
    generated = spec.get("generated")
    body = _GENERATORS[generated](random.Random(name)) if generated else (PAGES / f"{name}.html").read_bytes()
    return CorpusCase(
        name=name,
        url=spec["url"],
        body=body,
        headers={str(k): str(v) for k, v in (spec.get("headers") or {}).items()},
        expect=spec.get("expect") or {},
        final_url=spec.get("final_url", ""),
        depth=int(spec.get("depth", 1)),
    )


def load_corpus() -> list[CorpusCase]:
    """Every case, by name."""
    return [load_case(path) for path in sorted(PAGES.glob("*.yaml"))]
