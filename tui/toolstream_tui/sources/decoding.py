"""Content-Encoding, decoded a bounded piece at a time.

A 4 MB gzip body can inflate to 4 GiB; decoded a whole network read at a time
(as an HTTP client's own decoder does) one read can be hundreds of megabytes
before any limit is checked. Here no piece is larger than PIECE bytes, so the
session checks its limits as the body inflates, and stops it early."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any

PIECE = 64 * 1024
GZIP = frozenset({"gzip", "x-gzip"})
DEFLATE = "deflate"
ACCEPTED = "gzip, deflate"  # what we ask for: the encodings decoded here
GZIP_WBITS = 16 + zlib.MAX_WBITS
GZIP_MAGIC = b"\x1f\x8b"


class UnsupportedEncoding(ValueError):
    """A Content-Encoding this module cannot decode."""


class BodyDecoder:
    """Decodes a body sent with `content_encoding` (identity, gzip or deflate)."""

    def __init__(self, content_encoding: str) -> None:
        codings = [
            coding.strip().lower()
            for coding in content_encoding.split(",")
            if coding.strip().lower() not in ("", "identity")
        ]
        if len(codings) > 1 or (codings and codings[0] not in GZIP | {DEFLATE}):
            raise UnsupportedEncoding(f"unsupported Content-Encoding: {content_encoding}")
        self.coding = codings[0] if codings else None
        self._inflater = self._new_inflater(raw_deflate=False)
        self._head = b""  # a deflate body may be zlib-wrapped or raw: told by its 2 first bytes
        self._started = self.coding != DEFLATE

    def _new_inflater(self, raw_deflate: bool) -> Any:
        if self.coding in GZIP:
            return zlib.decompressobj(GZIP_WBITS)
        return zlib.decompressobj(-zlib.MAX_WBITS if raw_deflate else zlib.MAX_WBITS)

    def decode(self, data: bytes) -> Iterator[bytes]:
        """The decoded pieces of `data`, each at most PIECE bytes; raises zlib.error."""
        if self.coding is None:
            if data:
                yield data
            return
        if not self._started:
            self._head += data
            if len(self._head) < 2:
                return
            data, self._head, self._started = self._head, b"", True
            if not _zlib_wrapped(data):
                self._inflater = self._new_inflater(raw_deflate=True)
        yield from self._inflate(data)

    def _inflate(self, data: bytes) -> Iterator[bytes]:
        while True:
            piece = self._inflater.decompress(data, PIECE)
            if piece:
                yield piece
            if self._inflater.eof:
                rest = self._inflater.unused_data
                if not (self.coding in GZIP and rest.startswith(GZIP_MAGIC)):
                    return  # bytes after the end of the body are not part of it
                self._inflater = self._new_inflater(raw_deflate=False)  # another gzip member
                data = rest
                continue
            data = self._inflater.unconsumed_tail
            if not data and len(piece) < PIECE:
                return

    def flush(self) -> Iterator[bytes]:
        """What the decoder still holds once the body has ended."""
        if self.coding is None:
            return
        if self._head:  # a one-byte deflate body
            self._inflater = self._new_inflater(raw_deflate=True)
            yield from self._inflate(self._head)
        rest = self._inflater.flush()
        for start in range(0, len(rest), PIECE):
            yield rest[start : start + PIECE]


def _zlib_wrapped(data: bytes) -> bool:
    """Does a deflate body start with a zlib header (RFC 1950), not raw deflate?"""
    return len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0
