"""The engine's state as bytes: changelog deltas (the pages a commit changed) and snapshot chunks.

One blob holds whole rows of the per-page arrays for a set of slots (column after column,
little-endian), the host names added from a given host id on, the URLs of home and
index pages among those slots, the URLs of the rows new since the last save (a row's URL
never changes), and the out-links kept for replays of the crawled pages among them whose
links changed since. Applying a blob overwrites the rows it holds and appends new ones, so
a snapshot followed by the deltas committed after it, in order, rebuilds the state;
``finish_load`` then derives what is not stored (site sizes, the watch list). Blobs of the
first format (``OPC1``: no URLs of ordinary pages, no out-links) are still read; their
pages get an empty URL and no kept links (they are replayed again after their next crawl).
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import struct
from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np

from libs.common.url_keys import UrlKind
from services.importance.engine import CRAWLED, FLOAT_COLUMNS, INT_COLUMNS, KIND_MASK, OpicEngine, Totals

MAGIC = b"OPC2"
FIRST_FORMAT = b"OPC1"
_HEADER = struct.Struct("<4sIIII")
SNAPSHOT_CHUNK = 200_000


class CorruptState(ValueError):
    pass


def encode_rows(engine: OpicEngine, slots: Sequence[int], first_host: int, first_new: int,
                links: Sequence[int]) -> bytes:
    """Rows ``slots`` (sorted, distinct), the hosts from id ``first_host`` on, their home/index URLs.

    Plus the URLs of the rows from slot ``first_new`` on (all in ``slots``) and the kept out-links
    of the pages ``links``.
    """
    index = np.asarray(slots, dtype=np.int64)
    hosts = "\n".join(engine.hosts[first_host:]).encode("utf-8")
    urls = [(s, engine.site_urls[s]) for s in slots if s in engine.site_urls]
    parts = [_HEADER.pack(MAGIC, len(index), first_host, len(engine.hosts) - first_host, len(urls)),
             index.tobytes()]
    for name in INT_COLUMNS:
        parts.append(np.frombuffer(getattr(engine, name), dtype=np.int64)[index].tobytes())
    for name in FLOAT_COLUMNS:
        parts.append(np.frombuffer(getattr(engine, name), dtype=np.float64)[index].tobytes())
    parts.append(np.frombuffer(engine.flags, dtype=np.uint8)[index].tobytes())
    url_text = "\n".join(u for _, u in urls).encode("utf-8")
    parts += [np.asarray([s for s, _ in urls], dtype=np.int64).tobytes(),
              struct.pack("<I", len(hosts)), hosts, struct.pack("<I", len(url_text)), url_text]
    parts += _new_urls(engine, slots, first_new)
    kept = [(s, engine.links[s]) for s in links if s in engine.links]
    parts += [struct.pack("<I", len(kept)), np.asarray([s for s, _ in kept], dtype=np.int64).tobytes(),
              np.asarray([len(raw) for _, raw in kept], dtype=np.int64).tobytes(), *(raw for _, raw in kept)]
    return b"".join(parts)


def _new_urls(engine: OpicEngine, slots: Sequence[int], first_new: int) -> list[bytes]:
    """The section of the URLs of rows ``first_new`` .. end of ``slots``: first slot, count, ends, text."""
    new = [s for s in slots if s >= first_new]
    if new and new != list(range(new[0], new[0] + len(new))):
        raise ValueError("new rows must be contiguous")
    start = new[0] if new else 0
    ends = np.frombuffer(engine.url_end, dtype=np.int64)[start : start + len(new)]
    base = engine.url_end[start - 1] if start else 0
    return [struct.pack("<qI", start, len(new)), (ends - base).astype(np.int64).tobytes(),
            bytes(engine.url_text[base : int(ends[-1])] if len(new) else b"")]


def encode_delta(engine: OpicEngine, first_host: int) -> bytes:
    """The rows changed since the last save, with the URLs of new ones and the changed out-links.

    Clears ``engine.dirty`` and ``engine.links_dirty`` and moves ``engine.rows_saved`` on.
    """
    slots = sorted(engine.dirty)
    engine.dirty.clear()
    links = sorted(engine.links_dirty)
    engine.links_dirty.clear()
    blob = encode_rows(engine, slots, first_host, engine.rows_saved, links)
    engine.rows_saved = len(engine)
    return blob


def encode_snapshot(engine: OpicEngine) -> list[bytes]:
    """The whole state, in chunks of at most ``SNAPSHOT_CHUNK`` rows (the first one has the hosts)."""
    n = len(engine)
    kept = sorted(engine.links)
    chunks = []
    for start in range(0, max(n, 1), SNAPSHOT_CHUNK):
        end = min(n, start + SNAPSHOT_CHUNK)
        links = kept[bisect.bisect_left(kept, start) : bisect.bisect_left(kept, end)]
        chunks.append(encode_rows(engine, range(start, end), 0 if start == 0 else len(engine.hosts), start, links))
    return chunks


def apply_rows(engine: OpicEngine, blob: bytes) -> None:
    """Applies one delta or snapshot chunk to ``engine`` (see the module docstring)."""
    if len(blob) < _HEADER.size:
        raise CorruptState("blob shorter than its header")
    magic, rows, first_host, host_count, url_count = _HEADER.unpack_from(blob)
    if magic not in (MAGIC, FIRST_FORMAT):
        raise CorruptState(f"unknown state format {magic!r}")
    at = _HEADER.size

    def take(dtype: str, count: int) -> np.ndarray:
        nonlocal at
        size = np.dtype(dtype).itemsize * count
        if at + size > len(blob):
            raise CorruptState("blob truncated")
        out = np.frombuffer(blob, dtype=dtype, count=count, offset=at)
        at += size
        return out

    slots = take("<i8", rows)
    columns: dict[str, np.ndarray] = {name: take("<i8", rows) for name in INT_COLUMNS}
    columns.update({name: take("<f8", rows) for name in FLOAT_COLUMNS})
    flags = take("u1", rows)
    url_slots = take("<i8", url_count)
    (host_len,) = struct.unpack_from("<I", blob, at)
    at += 4
    host_names = blob[at : at + host_len].decode("utf-8").split("\n") if host_count else []
    at += host_len
    (url_len,) = struct.unpack_from("<I", blob, at)
    at += 4
    urls = blob[at : at + url_len].decode("utf-8").split("\n") if url_count else []
    at += url_len
    if len(host_names) != host_count or len(urls) != url_count:
        raise CorruptState("host or URL list does not match its count")
    new_start, new_ends, new_text = 0, np.zeros(0, np.int64), b""
    kept: list[tuple[int, bytes]] = []
    if magic == MAGIC:
        if at + 12 > len(blob):
            raise CorruptState("blob truncated")
        new_start, new_count = struct.unpack_from("<qI", blob, at)
        at += 12
        new_ends = take("<i8", new_count)
        text_len = int(new_ends[-1]) if new_count else 0
        if at + text_len + 4 > len(blob) or (new_count and (np.any(np.diff(new_ends) < 0) or new_ends[0] < 0)):
            raise CorruptState("URL section truncated or out of order")
        new_text = blob[at : at + text_len]
        at += text_len
        (link_count,) = struct.unpack_from("<I", blob, at)
        at += 4
        link_slots = take("<i8", link_count).tolist()
        link_sizes = take("<i8", link_count).tolist()
        for slot, size in zip(link_slots, link_sizes, strict=True):
            if size < 0 or size % 10 or at + size > len(blob):
                raise CorruptState("kept out-links truncated")
            kept.append((slot, blob[at : at + size]))
            at += size
    for offset, name in enumerate(host_names):
        if first_host + offset < len(engine.hosts):
            continue
        if first_host + offset != len(engine.hosts):
            raise CorruptState("host ids are not contiguous")
        engine.host_id(name)
    n = len(engine)
    old = slots < n
    if old.any():
        idx = slots[old]
        for name in (*INT_COLUMNS, *FLOAT_COLUMNS):
            view = np.frombuffer(getattr(engine, name), dtype=np.int64 if name in INT_COLUMNS else np.float64)
            view[idx] = columns[name][old]
            del view
        flag_view = np.frombuffer(engine.flags, dtype=np.uint8)
        flag_view[idx] = flags[old]
        del flag_view
    new = ~old
    if new.any():
        fresh = slots[new]
        if not np.array_equal(fresh, np.arange(n, n + len(fresh))):
            raise CorruptState("new rows do not follow the existing ones")
        for name in (*INT_COLUMNS, *FLOAT_COLUMNS):
            getattr(engine, name).frombytes(columns[name][new].tobytes())
        engine.flags.extend(flags[new].tobytes())
        _append_urls(engine, fresh, new_start, new_ends, new_text)
        for i, key in enumerate(columns["keys"][new].tolist()):
            engine.slots[key] = n + i
    for s, url in zip(url_slots.tolist(), urls, strict=True):
        engine.site_urls[s] = url
    for s, raw in kept:
        if not 0 <= s < len(engine):
            raise CorruptState("out-links kept for a row that does not exist")
        engine.links[s] = raw


def _append_urls(engine: OpicEngine, fresh: np.ndarray, start: int, ends: np.ndarray, text: bytes) -> None:
    """Appends the URLs of the new rows ``fresh`` (those the blob's URL section covers; others get "")."""
    base = len(engine.url_text)
    covered = (fresh >= start) & (fresh < start + len(ends))
    if covered.all() and len(fresh) == len(ends):
        engine.url_text += text
        engine.url_end.frombytes((ends + base).astype(np.int64).tobytes())
        return
    for s in fresh.tolist():
        i = s - start
        if 0 <= i < len(ends):
            engine.url_text += text[int(ends[i - 1]) if i else 0 : int(ends[i])]
        engine.url_end.append(len(engine.url_text))


def finish_load(engine: OpicEngine) -> None:
    """Derives what the blobs do not store: site sizes, uncrawled home/index pages per site, the watch list."""
    host = np.frombuffer(engine.host, dtype=np.int64)
    sizes = np.bincount(host, minlength=len(engine.hosts)) if len(host) else np.zeros(len(engine.hosts), np.int64)
    del host
    engine.host_size = type(engine.host_size)("q", sizes.astype(np.int64).tobytes())
    engine.host_sized = type(engine.host_sized)("q", np.maximum(sizes, 1).astype(np.int64).tobytes())
    engine.site_pages.clear()
    flags = engine.flags
    for s in range(len(engine)):
        if flags[s] & KIND_MASK != UrlKind.PAGE and not flags[s] & CRAWLED:
            engine.site_pages.setdefault(engine.host[s], []).append(s)
    engine.shown = array("d", [-1.0]) * len(engine)
    engine.dirty.clear()
    engine.links_dirty.clear()
    engine.rows_saved = len(engine)
    engine.rearm_all()


def totals_json(totals: Totals) -> str:
    return json.dumps(dataclasses.asdict(totals))


def totals_from(data: dict[str, Any]) -> Totals:
    return Totals(**data)
