"""Arrays encoded at once in PostgreSQL's binary format (array_send)."""

from __future__ import annotations

import struct
from datetime import UTC, datetime, timedelta

import pytest

from libs.common.db.arrays import float8_array, int4_array, int8_array, text_array, timestamptz_array


def test_fixed_width_elements_with_and_without_nulls() -> None:
    assert int8_array([1, 2]) == struct.pack(">iiiii", 1, 0, 20, 2, 1) + struct.pack(">iqiq", 8, 1, 8, 2)
    assert int4_array([7, None]) == struct.pack(">iiiii", 1, 1, 23, 2, 1) + struct.pack(">iii", 4, 7, -1)
    assert float8_array([0.5, 2]) == struct.pack(">iiiii", 1, 0, 701, 2, 1) + struct.pack(">idid", 8, 0.5, 8, 2.0)


def test_empty_arrays_have_no_dimension() -> None:
    assert int8_array([]) == struct.pack(">iii", 0, 0, 20)
    assert text_array([]) == struct.pack(">iii", 0, 0, 25)


def test_text_is_utf8_and_timestamps_count_microseconds_from_2000() -> None:
    assert text_array(["é", None]) == struct.pack(">iiiii", 1, 1, 25, 2, 1) + struct.pack(">i", 2) + "é".encode() \
        + struct.pack(">i", -1)
    at = datetime(2000, 1, 1, tzinfo=UTC) + timedelta(seconds=1, microseconds=5)
    assert timestamptz_array([at]) == struct.pack(">iiiii", 1, 0, 1184, 1, 1) + struct.pack(">iq", 8, 1_000_005)
    with pytest.raises(TypeError):
        timestamptz_array([datetime(2020, 1, 1)])  # a naive time is no instant
