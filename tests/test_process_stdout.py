"""The headless report goes to stdout as UTF-8 bytes where the text layer would
write those same bytes, and through the text layer otherwise (its encoding and
errors decide, as before)."""

from __future__ import annotations

import io
import sys

import pytest

from toolstream_tui.process import write_utf8_to_stdout

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
