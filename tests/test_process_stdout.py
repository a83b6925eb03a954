"""The headless report goes to stdout as UTF-8 bytes where the text layer would
write those same bytes, and through the text layer otherwise: what its encoding
cannot write becomes JSON escapes, never an error."""

from __future__ import annotations

import io
import json
import sys

import pytest

from toolstream_tui.process import (
    JSON_ESCAPES,
    prepare_standard_streams,
    write_out,
    write_utf8_to_stdout,
)

PIECES = ["{\n", '  "text": "é🚀\\u200d"\n', "}\n"]


def test_a_utf8_stdout_gets_the_bytes_after_what_its_text_layer_held(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8", newline=None)
    stream.write("before ")  # still in the text layer's buffer: written first
    monkeypatch.setattr(sys, "stdout", stream)
    write_utf8_to_stdout(memoryview(piece.encode()) for piece in PIECES)
    assert raw.getvalue() == ("before " + "".join(PIECES)).encode()


def test_a_stdout_without_a_buffer_gets_text(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stdout", stream)
    write_utf8_to_stdout(piece.encode() for piece in PIECES)
    assert stream.getvalue() == "".join(PIECES)


def test_another_encoding_goes_through_the_text_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-16-le")
    monkeypatch.setattr(sys, "stdout", stream)
    write_utf8_to_stdout(piece.encode() for piece in PIECES)
    stream.flush()
    assert raw.getvalue() == "".join(PIECES).encode("utf-16-le")


@pytest.mark.parametrize("text", ["é", "北京", "🚀", "a\u200db", "\udc80"])
def test_what_an_encoding_cannot_write_becomes_json_escapes(text: str) -> None:
    written = f'"{text}"'.encode("ascii", JSON_ESCAPES)
    assert json.loads(written) == text


def test_a_stdout_that_cannot_encode_every_character_writes_escapes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    monkeypatch.setattr(sys, "stdout", stream)
    prepare_standard_streams()
    write_utf8_to_stdout(piece.encode() for piece in PIECES)
    assert json.loads(raw.getvalue()) == json.loads("".join(PIECES))


def test_a_closed_stdout_becomes_a_place_to_write_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "stdout", None)
    prepare_standard_streams()
    try:
        write_out("a report nobody reads\n")
    finally:
        sys.stdout.close()
