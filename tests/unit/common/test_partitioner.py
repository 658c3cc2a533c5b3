"""murmur2 partitioning, checked against the Java client's published test vectors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from libs.common.kafka.partitioner import fingerprint_partition, fingerprint_partitions, murmur2, partition_for
from libs.common.url_keys import key_text
from libs.common.urls import url_fingerprint

# org.apache.kafka.common.utils.UtilsTest#testMurmur2 (signed 32-bit results)
JAVA_VECTORS = {
    "21": -973932308,
    "foobar": -790332482,
    "a-little-bit-long-string": -985981536,
    "a-little-bit-longer-string": -1486304829,
    "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    "abc": 479470107,
}


def _signed32(value: int) -> int:
    return value - (1 << 32) if value >= 1 << 31 else value


@pytest.mark.parametrize(("key", "expected"), JAVA_VECTORS.items())
def test_murmur2_matches_the_java_client(key: str, expected: int) -> None:
    assert _signed32(murmur2(key.encode("ascii"))) == expected


@pytest.mark.parametrize(("key", "expected"), JAVA_VECTORS.items())
def test_partition_for_is_the_java_default_partition(key: str, expected: int) -> None:
    # Java: Utils.toPositive(murmur2(key)) % numPartitions, toPositive = & 0x7fffffff
    for partitions in (1, 3, 12, 97):
        assert partition_for(key, partitions) == (expected & 0x7FFFFFFF) % partitions


def test_murmur2_is_an_unsigned_32_bit_value() -> None:
    assert murmur2(b"") == murmur2(b"")
    assert 0 <= murmur2(b"") < 1 << 32
    assert murmur2(b"a") != murmur2(b"b")


def test_partition_for_encodes_keys_as_utf8() -> None:
    assert partition_for("caf\u00e9.test", 1000) == (murmur2("caf\u00e9.test".encode()) & 0x7FFFFFFF) % 1000


@given(st.text(max_size=64), st.integers(min_value=1, max_value=500))
def test_partition_for_stays_in_range(key: str, partitions: int) -> None:
    assert 0 <= partition_for(key, partitions) < partitions


def test_keys_spread_over_all_partitions() -> None:
    used = {partition_for(f"host-{i}.test", 12) for i in range(500)}
    assert used == set(range(12))


def test_the_partitions_of_fingerprints_are_those_of_their_keys() -> None:
    fps = [url_fingerprint(f"http://site-{i % 37}.example/a/{i * 7919}.html?x={i}") for i in range(3000)]
    assert {fp < 0 for fp in fps} == {True, False}
    for partitions in (1, 7, 12):
        assert fingerprint_partitions(fps, partitions) == [partition_for(key_text(fp), partitions) for fp in fps]
    assert fingerprint_partition(fps[0], 12) == partition_for(key_text(fps[0]), 12)
    assert fingerprint_partitions([], 12) == []
