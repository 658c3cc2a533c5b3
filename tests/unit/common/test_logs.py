"""JSON log lines: one object per record, with extra fields and exceptions."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import pytest

from libs.common.logs import JsonFormatter, configure_logging


def _record(msg: str, *args: Any, level: int = logging.INFO, extra: dict[str, Any] | None = None,
            exc: bool = False) -> logging.LogRecord:
    logger = logging.getLogger("trawl.test.logs")
    exc_info = sys.exc_info() if exc else None
    return logger.makeRecord(logger.name, level, __file__, 1, msg, args, exc_info, extra=extra)


def test_a_record_is_one_json_object_with_the_standard_fields() -> None:
    line = JsonFormatter("fetcher").format(_record("fetched %s in %d ms", "http://a.test/", 12))
    assert "\n" not in line
    out = json.loads(line)
    assert out["level"] == "info"
    assert out["service"] == "fetcher"
    assert out["logger"] == "trawl.test.logs"
    assert out["msg"] == "fetched http://a.test/ in 12 ms"
    assert out["ts"].endswith("Z") and "T" in out["ts"]
    # LogRecord internals stay out of the line
    assert not {"args", "levelno", "pathname", "lineno", "msecs", "exc_info"} & set(out)


def test_extra_fields_become_top_level_keys() -> None:
    extra = {"url": "http://a.test/x", "host": "a.test", "status": 404, "ratio": 0.5, "ok": False,
             "nothing": None, "tags": ["a", "b"]}
    out = json.loads(JsonFormatter("fetcher").format(_record("failed", level=logging.WARNING, extra=extra)))
    assert out["level"] == "warning"
    assert out["url"] == "http://a.test/x"
    assert out["host"] == "a.test"
    assert out["status"] == 404
    assert out["ratio"] == 0.5
    assert out["ok"] is False
    assert out["nothing"] is None
    assert out["tags"] == "['a', 'b']"  # not JSON-native: kept as text


def test_the_exception_and_its_traceback_are_included() -> None:
    try:
        raise RuntimeError("boom \u00e9")
    except RuntimeError:
        line = JsonFormatter("dedup").format(_record("handler failed", level=logging.ERROR, exc=True))
    out = json.loads(line)
    assert out["level"] == "error"
    assert out["exc"].startswith("Traceback")
    assert "RuntimeError: boom \u00e9" in out["exc"]
    assert "\u00e9" in line  # non-ASCII written as is


def test_configure_logging_writes_json_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    root, noisy = logging.getLogger(), logging.getLogger("aiokafka")
    handlers, level, noisy_level = root.handlers[:], root.level, noisy.level
    try:
        configure_logging("linkbase", "debug")
        logging.getLogger("trawl.test.configured").debug("hello %s", "world", extra={"host": "b.test"})
        noisy.info("too noisy")
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        noisy.setLevel(noisy_level)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines == [
        {**lines[0], "level": "debug", "service": "linkbase", "msg": "hello world", "host": "b.test"}
    ]
