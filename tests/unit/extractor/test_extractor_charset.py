"""Decoding fetched bytes: header, BOM, meta, UTF-8, detection and garbage."""

from __future__ import annotations

import codecs
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.extractor.charset import decode_html, looks_binary

FRENCH = (
    "Le cœur déçu mais l'âme plutôt naïve, Louÿs rêva de crapaüter en canoë au delà des îles, "
    "près du mälström où brûlent les novæ. Où est passé l'été ? Ça coûte 5 € à Noël. "
)


def _page(text: str, head: str = "") -> str:
    return f"<html><head>{head}<title>Page</title></head><body><p>{text * 4}</p></body></html>"


def test_header_charset_latin1() -> None:
    body = _page(FRENCH.replace("€", "E").replace("œ", "oe")).encode("latin-1")
    text, encoding = decode_html(body, "text/html; charset=ISO-8859-1")
    assert "déçu" in text
    assert encoding == "cp1252"  # browsers read latin-1 labels as windows-1252


def test_header_charset_quoted_and_cp1252_euro() -> None:
    body = _page(FRENCH).encode("cp1252")
    text, encoding = decode_html(body, 'text/html; charset="windows-1252"')
    assert "5 €" in text
    assert "cœur" in text
    assert encoding == "cp1252"


def test_meta_charset_and_http_equiv() -> None:
    body = _page("こんにちは世界、クローラーです。", '<meta charset="Shift_JIS">').encode("cp932")
    text, encoding = decode_html(body, "text/html")
    assert "こんにちは世界" in text
    assert encoding == "cp932"
    legacy = '<meta http-equiv="Content-Type" content="text/html; charset=koi8-r">'
    body = _page("Привет, мир", legacy).encode("koi8-r")
    text, encoding = decode_html(body, None)
    assert "Привет, мир" in text
    assert encoding == "koi8-r"


def test_meta_charset_beyond_4kb_is_ignored() -> None:
    late = ("<!--" + "x" * 5000 + '--><meta charset="koi8-r"><p>ascii only</p>').encode("ascii")
    assert decode_html(late, None)[1] == "utf-8"
    early = ('<meta charset="koi8-r"><!--' + "x" * 5000 + "--><p>ascii only</p>").encode("ascii")
    assert decode_html(early, None)[1] == "koi8-r"


def test_bom_wins_over_header() -> None:
    body = codecs.BOM_UTF8 + _page(FRENCH).encode("utf-8")
    text, encoding = decode_html(body, "text/html; charset=iso-8859-1")
    assert encoding == "utf-8"
    assert text.startswith("<html>")
    assert "cœur" in text
    body16 = codecs.BOM_UTF16_LE + _page("hé").encode("utf-16-le")
    text, encoding = decode_html(body16, None)
    assert encoding == "utf-16-le"
    assert "hé" in text


def test_declared_utf8_but_body_is_cp1252() -> None:
    body = _page(FRENCH).encode("cp1252")
    text, encoding = decode_html(body, "text/html; charset=utf-8")
    assert encoding != "utf-8"
    assert "déçu" in text
    assert "\ufffd" not in text


def test_declared_latin1_but_body_is_utf8() -> None:
    body = _page(FRENCH).encode("utf-8")
    text, encoding = decode_html(body, "text/html; charset=iso-8859-1")
    assert encoding == "utf-8"
    assert "déçu" in text


def test_a_few_bad_bytes_do_not_discard_the_declaration() -> None:
    body = _page(FRENCH * 10).encode("utf-8") + b"\xff"
    text, encoding = decode_html(body, "text/html; charset=utf-8")
    assert encoding == "utf-8"
    assert "déçu" in text


def test_undeclared_utf8() -> None:
    text, encoding = decode_html(_page(FRENCH).encode("utf-8"), None)
    assert (encoding, "déçu" in text) == ("utf-8", True)


@pytest.mark.parametrize("header", ["text/html; charset=bogus-9", "text/html; charset=base64", "charset=", None])
def test_unknown_or_non_text_charset_labels_fall_back(header: str | None) -> None:
    text, encoding = decode_html(_page("plain").encode("ascii"), header)
    assert "plain" in text
    assert encoding == "utf-8"


def test_garbage_bytes() -> None:
    rng = random.Random(7)
    garbage = bytes(rng.randrange(256) for _ in range(20000))
    text, encoding = decode_html(garbage, "text/html; charset=utf-8")
    assert isinstance(text, str)
    assert codecs.lookup(encoding)
    assert decode_html(b"", None) == ("", "utf-8")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000), st.one_of(st.none(), st.text(max_size=40)))
def test_never_raises(body: bytes, header: str | None) -> None:
    text, encoding = decode_html(body, header)
    assert isinstance(text, str)
    assert encoding


def test_short_western_text_under_a_wrong_declaration_is_read_as_windows_1252() -> None:
    """The detector ties windows-1252 with -1250 and -1257 on short French: the web's commonest wins."""
    text = "Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e, na\u00efve fa\u00e7ade."
    body = f"<html><body><p>{text}</p></body></html>".encode("cp1252")
    text, encoding = decode_html(body, "text/html; charset=utf-8")
    assert (encoding, "crème brûlée" in text) == ("cp1252", True)


def test_binary_bodies_are_recognised() -> None:
    rng = random.Random(11)
    assert looks_binary(bytes(rng.randrange(256) for _ in range(5000)))
    assert looks_binary(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01")
    assert not looks_binary(_page("plain").encode("utf-8"))
    assert not looks_binary(b"<html><body>a stray \x00 NUL and \x01 in damaged markup" + b" text" * 300)
    assert not looks_binary(codecs.BOM_UTF16_LE + "<html>x</html>".encode("utf-16-le"))
    assert not looks_binary(b"")


NOISE = random.Random(5).randbytes(1_381_458)
"""Random bytes that, behind a UTF-16 byte order mark, decoded to 690,729 characters of garbage."""


BOMS = {"utf-16-le": codecs.BOM_UTF16_LE, "utf-16-be": codecs.BOM_UTF16_BE, "utf-8": codecs.BOM_UTF8,
        "utf-32-le": codecs.BOM_UTF32_LE, "utf-32-be": codecs.BOM_UTF32_BE}


@pytest.mark.parametrize("bom", BOMS.values(), ids=BOMS.keys())
def test_random_bytes_behind_a_byte_order_mark_are_binary(bom: bytes) -> None:
    assert looks_binary(bom + NOISE)
    assert looks_binary(bom + NOISE[:100])


WIDE_PAGE = ("<!doctype html><html><head><title>\u00dcber uns</title></head><body>"
             + "<p>Gr\u00fc\u00dfe aus K\u00f6ln, \u4e2d\u6587\u5b57\u7b26, \u0440\u0443\u0441\u0441\u043a\u0438\u0439,"
               " \U0001f600 \u2014 \uf007 an icon-font glyph</p>" * 100 + "</body></html>")
CHINESE_PAGE = "<html><body>" + "<p>\u8fd9\u662f\u4e00\u4e2a\u4e2d\u6587\u7f51\u9875\u7684\u6bb5\u843d\u3002</p>" * 100


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
@pytest.mark.parametrize("page", [WIDE_PAGE, CHINESE_PAGE], ids=["mixed", "chinese"])
def test_real_utf16_html_is_text_and_decoded_with_or_without_a_byte_order_mark(codec: str, page: str) -> None:
    bom = codecs.BOM_UTF16_LE if codec == "utf-16-le" else codecs.BOM_UTF16_BE
    for body, header in ((bom + page.encode(codec), None), (page.encode(codec), None),
                         (page.encode(codec), "text/html; charset=utf-16"),
                         (page.encode(codec), "text/html; charset=utf-8")):  # a wrong declaration
        assert not looks_binary(body)
        text, encoding = decode_html(body, header)
        assert (text, encoding) == (page, codec)


def test_a_few_odd_characters_in_text_behind_a_byte_order_mark_are_damage_not_binary() -> None:
    text = _page("caf\u00e9 \uf007\uf008 \x01 \ud7ff " + "ordinary words " * 100)
    assert not looks_binary(codecs.BOM_UTF8 + text.encode("utf-8"))
    assert not looks_binary(codecs.BOM_UTF16_LE + text.encode("utf-16-le"))
    damaged = bytearray(codecs.BOM_UTF16_LE + text.encode("utf-16-le"))
    damaged[101] = 0xD8  # one lone surrogate
    assert not looks_binary(bytes(damaged))


def test_binary_with_zeros_in_both_places_is_not_taken_for_utf16() -> None:
    assert looks_binary(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 80)
    assert looks_binary(bytes(4000))
