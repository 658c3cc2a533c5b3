"""The engine's state survives encoding: a snapshot plus later deltas rebuild it exactly."""

from __future__ import annotations

import struct
from array import array

import pytest

from services.importance.discovery import DiscoveryWeights
from services.importance.engine import DERIVED_COLUMNS, FLOAT_COLUMNS, INT_COLUMNS, OpicConfig, OpicEngine
from services.importance.shard import Shard
from services.importance.state_codec import CorruptState, apply_rows, encode_delta, encode_snapshot, finish_load

CONFIG = OpicConfig(weights=DiscoveryWeights(16.0, 4.0, 1.0), window_seconds=50.0, replays_per_visit=2.0)
COLUMNS = (*INT_COLUMNS, *FLOAT_COLUMNS, "flags")


def url(n: int) -> str:
    return f"http://h{n % 4}.example/" if n % 9 == 0 else f"http://h{n % 4}.example/s{n % 3}/" if n % 7 == 0 \
        else f"http://h{n % 4}.example/p{n}.html"


def crawl_some(shard: Shard, start: int, count: int) -> None:
    for page in range(start, start + count):
        targets = [t for t in ((page * 7 + k * 13) % 90 for k in range(5)) if t != page]
        targets = list(dict.fromkeys(targets))
        shard.visit(page, url(page), targets, [url(t) for t in targets], [0] * len(targets), float(page))
        shard.replay(float(page))
        shard.announcements()


def same(a: OpicEngine, b: OpicEngine) -> None:
    for name in COLUMNS:
        assert list(getattr(a, name)) == list(getattr(b, name)), name
    assert a.slots == b.slots and a.hosts == b.hosts and a.site_urls == b.site_urls
    assert [a.url(s) for s in range(len(a))] == [b.url(s) for s in range(len(b))]
    assert a.links == b.links
    assert list(a.host_size) == list(b.host_size)
    def uncrawled(e: OpicEngine) -> dict[int, list[int]]:
        return {h: sorted(s for s in v if not e.crawled(s)) for h, v in e.site_pages.items()}

    assert {h: v for h, v in uncrawled(a).items() if v} == {h: v for h, v in uncrawled(b).items() if v}
    assert set(a.watched()) == set(b.watched())


def test_every_per_page_column_is_stored_or_declared_derived() -> None:
    """The engine's column set is explicit: a new per-page column must be saved by the codec or listed as derived."""
    engine = OpicEngine(CONFIG, 100.0)
    crawl_some(Shard(0, engine), 0, 20)
    per_page = {name for name, value in vars(engine).items()
                if isinstance(value, array | bytearray) and len(value) == len(engine) and name != "url_end"}
    assert per_page == {*COLUMNS, *DERIVED_COLUMNS}


def test_snapshot_then_deltas_rebuild_the_engine() -> None:
    live = OpicEngine(CONFIG, 100.0)
    shard = Shard(0, live)
    crawl_some(shard, 0, 40)
    snapshot = encode_snapshot(live)
    live.dirty.clear()  # as after the commit the snapshot follows
    live.links_dirty.clear()
    live.rows_saved = len(live)
    hosts_saved = len(live.hosts)
    deltas = []
    for start in (40, 55, 70):
        crawl_some(shard, start, 15)
        deltas.append(encode_delta(live, hosts_saved))
        hosts_saved = len(live.hosts)

    loaded = OpicEngine(CONFIG, 100.0)
    for chunk in snapshot:
        apply_rows(loaded, chunk)
    for delta in deltas:
        apply_rows(loaded, delta)
    loaded.totals = live.totals
    finish_load(loaded)
    same(live, loaded)
    assert loaded.accounted() == live.accounted()


def test_large_snapshots_come_in_chunks(monkeypatch: object) -> None:
    import services.importance.state_codec as codec

    live = OpicEngine(CONFIG, 100.0)
    crawl_some(Shard(0, live), 0, 30)
    old = codec.SNAPSHOT_CHUNK
    codec.SNAPSHOT_CHUNK = 16
    try:
        chunks = encode_snapshot(live)
    finally:
        codec.SNAPSHOT_CHUNK = old
    assert len(chunks) == -(-len(live) // 16)
    loaded = OpicEngine(CONFIG, 100.0)
    for chunk in chunks:
        apply_rows(loaded, chunk)
    loaded.totals = live.totals
    finish_load(loaded)
    same(live, loaded)


def test_an_empty_engine_round_trips() -> None:
    empty = OpicEngine(CONFIG, 100.0)
    loaded = OpicEngine(CONFIG, 100.0)
    for chunk in encode_snapshot(empty):
        apply_rows(loaded, chunk)
    finish_load(loaded)
    assert len(loaded) == 0


def test_urls_and_kept_links_survive_a_reload() -> None:
    live = OpicEngine(CONFIG, 100.0)
    crawl_some(Shard(0, live), 0, 30)
    assert live.links and all(live.url(s) for s in range(len(live)))
    loaded = OpicEngine(CONFIG, 100.0)
    for chunk in encode_snapshot(live):
        apply_rows(loaded, chunk)
    loaded.totals = live.totals
    finish_load(loaded)
    assert loaded.url(live.slots[3]) == url(3)
    kept = loaded.kept_links(live.slots[3])
    assert kept is not None and list(kept[0]) == list(dict.fromkeys(t for t in ((3 * 7 + k * 13) % 90
                                                                                  for k in range(5)) if t != 3))


def first_format(blob: bytes) -> bytes:
    """``blob`` as the first state format wrote it: the same sections up to the home/index URLs."""
    _, rows, _, _, url_count = struct.unpack_from("<4sIIII", blob)
    at = 20 + 8 * rows * 10 + rows + 8 * url_count
    (host_len,) = struct.unpack_from("<I", blob, at)
    at += 4 + host_len
    (url_len,) = struct.unpack_from("<I", blob, at)
    return b"OPC1" + blob[4 : at + 4 + url_len]


def test_a_state_of_the_first_format_still_loads() -> None:
    live = OpicEngine(CONFIG, 100.0)
    crawl_some(Shard(0, live), 0, 30)
    loaded = OpicEngine(CONFIG, 100.0)
    for chunk in encode_snapshot(live):
        apply_rows(loaded, first_format(chunk))
    loaded.totals = live.totals
    finish_load(loaded)
    for name in COLUMNS:
        assert list(getattr(live, name)) == list(getattr(loaded, name)), name
    assert loaded.links == {}
    home = live.slots[0]
    assert loaded.url(home) == url(0) and loaded.url(live.slots[1]) == ""  # home pages keep theirs
    assert loaded.kept_links(live.slots[5]) is None  # replayed again once crawled again
    assert loaded.accounted() == live.accounted()


def test_a_corrupt_link_section_is_refused() -> None:
    live = OpicEngine(CONFIG, 100.0)
    crawl_some(Shard(0, live), 0, 10)
    blob = encode_snapshot(live)[0]
    with pytest.raises(CorruptState):
        apply_rows(OpicEngine(CONFIG, 100.0), blob[:-3])
