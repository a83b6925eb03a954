"""AWS event-stream frames, as Bedrock writes them (the stub's encoder).

A frame: total length and headers length (4 bytes each, big-endian), the CRC32
of those 8 bytes, the headers (1-byte name length, name, value type 7 = string
with a 2-byte length, value), the payload, and the CRC32 of all before it.
"""

from __future__ import annotations

import struct
import zlib

STRING = 7


def header(name: str, value: str) -> bytes:
    name_bytes, value_bytes = name.encode(), value.encode()
    return (
        bytes([len(name_bytes)])
        + name_bytes
        + bytes([STRING])
        + struct.pack(">H", len(value_bytes))
        + value_bytes
    )


def frame(headers: dict[str, str], payload: bytes, *, bad_crc: bool = False) -> bytes:
    """One frame; `bad_crc` spoils its message CRC (its prelude stays sound)."""
    head = b"".join(header(name, value) for name, value in headers.items())
    total = 12 + len(head) + len(payload) + 4
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + head + payload
    crc = zlib.crc32(message) ^ (0xFFFFFFFF if bad_crc else 0)
    return message + struct.pack(">I", crc)


def event_frame(event_type: str, payload: bytes, *, bad_crc: bool = False) -> bytes:
    headers = {
        ":event-type": event_type,
        ":content-type": "application/json",
        ":message-type": "event",
    }
    return frame(headers, payload, bad_crc=bad_crc)


def exception_frame(exception_type: str, payload: bytes) -> bytes:
    headers = {
        ":exception-type": exception_type,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return frame(headers, payload)
