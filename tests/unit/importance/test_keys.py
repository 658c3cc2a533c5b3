"""Fingerprints, keys and owners computed fast agree with the common URL and partitioner functions."""

from __future__ import annotations

from libs.common.kafka.partitioner import partition_for
from libs.common.urls import normalize_url, url_fingerprint, url_key
from services.importance.keys import fingerprint, key_text, owner, owners


def test_fast_keys_equal_the_common_ones() -> None:
    urls = [normalize_url(f"http://site-{i % 37}.example/a/{i * 7919}.html?x={i}") for i in range(3000)]
    fps = [fingerprint(u) for u in urls]
    assert fps == [url_fingerprint(u) for u in urls]
    assert [key_text(f) for f in fps] == [url_key(u) for u in urls]
    for partitions in (1, 7, 12):
        assert owners(fps, partitions) == [partition_for(url_key(u), partitions) for u in urls]
    assert owner(fps[0], 12) == partition_for(url_key(urls[0]), 12)
    assert owners([], 12) == []
