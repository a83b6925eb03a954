"""Content-Encoding decoded a bounded piece at a time: however far a body
inflates, no piece is larger than PIECE, so limits are checked as it grows."""

from __future__ import annotations

import gzip
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolstream_tui.sources.decoding import PIECE, BodyDecoder, UnsupportedEncoding


def decoded(decoder: BodyDecoder, reads: list[bytes]) -> list[bytes]:
    pieces = [piece for read in reads for piece in decoder.decode(read)]
    return pieces + list(decoder.flush())


def cut(data: bytes, size: int) -> list[bytes]:
    return [data[start : start + size] for start in range(0, len(data), size)] or [b""]


def test_a_highly_compressed_read_comes_out_in_bounded_pieces() -> None:
    body = b"x" * (20 * PIECE + 7)
    packed = gzip.compress(body)
    assert len(packed) < PIECE  # one network read
    pieces = decoded(BodyDecoder("gzip"), [packed])
    assert max(map(len, pieces)) <= PIECE
    assert b"".join(pieces) == body


def test_decoding_stops_when_the_reader_stops() -> None:
    """A generator: a reader that takes a few pieces never inflates the rest."""
    packed = gzip.compress(b"x" * (1000 * PIECE))
    pieces = BodyDecoder("gzip").decode(packed)
    taken = [next(pieces) for _ in range(3)]
    assert sum(map(len, taken)) == 3 * PIECE


def packed_as(encoding: str, body: bytes) -> bytes:
    if encoding.endswith("gzip"):
        return gzip.compress(body)
    if encoding == "deflate-zlib":
        return zlib.compress(body)
    if encoding == "deflate-raw":
        compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
        return compressor.compress(body) + compressor.flush()
    return body


@settings(max_examples=60, deadline=None)
@given(
    body=st.binary(max_size=3000),
    repeats=st.sampled_from([1, 2000]),  # 2000: it inflates past PIECE
    size=st.integers(1, 4000),
    encoding=st.sampled_from(["gzip", "x-gzip", "deflate-zlib", "deflate-raw", "identity"]),
)
def test_any_body_cut_anywhere_decodes_to_itself(
    body: bytes, repeats: int, size: int, encoding: str
) -> None:
    body *= repeats
    header = encoding.removesuffix("-zlib").removesuffix("-raw")
    pieces = decoded(BodyDecoder(header), cut(packed_as(encoding, body), size))
    assert b"".join(pieces) == body
    assert all(len(piece) <= PIECE for piece in pieces)


def test_gzip_members_one_after_another_are_one_body() -> None:
    packed = gzip.compress(b"first ") + gzip.compress(b"second")
    assert b"".join(decoded(BodyDecoder("gzip"), cut(packed, 5))) == b"first second"


@pytest.mark.parametrize("encoding", ["br", "zstd", "gzip, gzip", "compress"])
def test_an_encoding_not_asked_for_is_refused_by_name(encoding: str) -> None:
    with pytest.raises(UnsupportedEncoding, match="unsupported Content-Encoding"):
        BodyDecoder(encoding)


def test_a_corrupt_gzip_body_raises_a_zlib_error() -> None:
    with pytest.raises(zlib.error):
        list(BodyDecoder("gzip").decode(b"\x1f\x8b not gzip at all"))
