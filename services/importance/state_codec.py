"""The engine's state as bytes: changelog deltas (the pages a commit changed) and snapshot chunks.

One blob holds whole rows of the per-page arrays for a set of slots (column after column,
little-endian), the host names added from a given host id on, and the URLs of home and
index pages among those slots (the only URLs the state keeps, to announce them again).
Applying a blob overwrites the rows it holds and appends new ones, so a snapshot followed
by the deltas committed after it, in order, rebuilds the state; ``finish_load`` then
derives what is not stored (site sizes, the watch list).
"""

from __future__ import annotations

import dataclasses
import json
import struct
from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np

from services.importance.discovery import UrlKind
from services.importance.engine import CRAWLED, KIND_MASK, OpicEngine, Totals

MAGIC = b"OPC1"
_HEADER = struct.Struct("<4sIIII")
_FLOAT_COLUMNS = ("cash", "history", "mark_new", "mark_all", "weight", "last_visit")
_INT_COLUMNS = ("keys", "visits", "host")
SNAPSHOT_CHUNK = 200_000


class CorruptState(ValueError):
    pass


def encode_rows(engine: OpicEngine, slots: Sequence[int], first_host: int) -> bytes:
    """Rows ``slots`` (sorted, distinct), the hosts from id ``first_host`` on, their home/index URLs."""
    index = np.asarray(slots, dtype=np.int64)
    hosts = "\n".join(engine.hosts[first_host:]).encode("utf-8")
    urls = [(s, engine.site_urls[s]) for s in slots if s in engine.site_urls]
    parts = [_HEADER.pack(MAGIC, len(index), first_host, len(engine.hosts) - first_host, len(urls)),
             index.tobytes()]
    for name in _INT_COLUMNS:
        parts.append(np.frombuffer(getattr(engine, name), dtype=np.int64)[index].tobytes())
    for name in _FLOAT_COLUMNS:
        parts.append(np.frombuffer(getattr(engine, name), dtype=np.float64)[index].tobytes())
    parts.append(np.frombuffer(engine.flags, dtype=np.uint8)[index].tobytes())
    url_text = "\n".join(u for _, u in urls).encode("utf-8")
    parts += [np.asarray([s for s, _ in urls], dtype=np.int64).tobytes(),
              struct.pack("<I", len(hosts)), hosts, struct.pack("<I", len(url_text)), url_text]
    return b"".join(parts)


def encode_delta(engine: OpicEngine, first_host: int) -> bytes:
    """The rows changed since the last save (clears ``engine.dirty``)."""
    slots = sorted(engine.dirty)
    engine.dirty.clear()
    return encode_rows(engine, slots, first_host)


def encode_snapshot(engine: OpicEngine) -> list[bytes]:
    """The whole state, in chunks of at most ``SNAPSHOT_CHUNK`` rows (the first one has the hosts)."""
    n = len(engine)
    chunks = []
    for start in range(0, max(n, 1), SNAPSHOT_CHUNK):
        chunks.append(encode_rows(engine, range(start, min(n, start + SNAPSHOT_CHUNK)),
                                  0 if start == 0 else len(engine.hosts)))
    return chunks


def apply_rows(engine: OpicEngine, blob: bytes) -> None:
    """Applies one delta or snapshot chunk to ``engine`` (see the module docstring)."""
    if len(blob) < _HEADER.size:
        raise CorruptState("blob shorter than its header")
    magic, rows, first_host, host_count, url_count = _HEADER.unpack_from(blob)
    if magic != MAGIC:
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
    columns: dict[str, np.ndarray] = {name: take("<i8", rows) for name in _INT_COLUMNS}
    columns.update({name: take("<f8", rows) for name in _FLOAT_COLUMNS})
    flags = take("u1", rows)
    url_slots = take("<i8", url_count)
    (host_len,) = struct.unpack_from("<I", blob, at)
    at += 4
    host_names = blob[at : at + host_len].decode("utf-8").split("\n") if host_count else []
    at += host_len
    (url_len,) = struct.unpack_from("<I", blob, at)
    at += 4
    urls = blob[at : at + url_len].decode("utf-8").split("\n") if url_count else []
    if len(host_names) != host_count or len(urls) != url_count:
        raise CorruptState("host or URL list does not match its count")
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
        for name in (*_INT_COLUMNS, *_FLOAT_COLUMNS):
            view = np.frombuffer(getattr(engine, name), dtype=np.int64 if name in _INT_COLUMNS else np.float64)
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
        for name in (*_INT_COLUMNS, *_FLOAT_COLUMNS):
            getattr(engine, name).frombytes(columns[name][new].tobytes())
        engine.flags.extend(flags[new].tobytes())
        for i, key in enumerate(columns["keys"][new].tolist()):
            engine.slots[key] = n + i
    for s, url in zip(url_slots.tolist(), urls, strict=True):
        engine.site_urls[s] = url


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
    engine.rearm_all()


def totals_json(totals: Totals) -> str:
    return json.dumps(dataclasses.asdict(totals))


def totals_from(data: dict[str, Any]) -> Totals:
    return Totals(**data)
