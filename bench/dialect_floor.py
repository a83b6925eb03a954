"""The yardstick of `python -m bench dialects`: `python bench/dialect_floor.py FRAMING
FILE` reads the file, frames it and `json.loads` each event's payload, nothing
else. Kept plain and fast; it imports nothing of the project.

`--bound` adds what any headless run must do besides: it parses with orjson (the
project's JSON library, whose import is part of every run) and writes what it
parsed, indented, to stdout. Where the events hold little but the calls'
arguments, that is less than the report writes (each call's arguments as text
and parsed), so a stream whose bound is past the goal cannot meet it, however
the project is written.

- sse: split on blank lines, join each event's `data:` lines;
- ndjson: split lines;
- json-array: scan the array element by element (`raw_decode` finds each end);
- eventstream: read each prelude, check both CRC32s, slice the payload.
"""

from __future__ import annotations

import json
import struct
import sys
import zlib
from collections.abc import Iterator

DONE = b"[DONE]"


def sse(body: bytes) -> Iterator[bytes]:
    for block in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = [line[5:].removeprefix(b" ") for line in block.split(b"\n") if line[:5] == b"data:"]
        if data and data != [DONE]:
            yield b"\n".join(data)


def ndjson(body: bytes) -> Iterator[bytes]:
    for line in body.split(b"\n"):
        if line.strip():
            yield line


def json_array(body: bytes) -> int:
    """Decodes each element where it starts; returns the number of elements."""
    text = body.decode()
    decode = json.JSONDecoder().raw_decode
    count, at = 0, text.index("[") + 1
    while True:
        at = skip(text, at)
        if text[at] == "]":
            return count
        _, at = decode(text, at)
        count += 1
        at = skip(text, at)
        if text[at] == ",":
            at += 1


def skip(text: str, at: int) -> int:
    while text[at] in " \t\r\n":
        at += 1
    return at


def eventstream(body: bytes) -> Iterator[memoryview]:
    view, at, end = memoryview(body), 0, len(body)
    unpack = struct.Struct(">III").unpack_from
    crc = zlib.crc32
    while at < end:
        total, headers, prelude_crc = unpack(view, at)
        if crc(view[at : at + 8]) != prelude_crc:
            raise ValueError(f"prelude CRC at byte {at}")
        last = at + total - 4
        if crc(view[at:last]) != int.from_bytes(view[last : last + 4], "big"):
            raise ValueError(f"message CRC at byte {at}")
        yield view[at + 12 + headers : last]
        at += total


# The framings that yield each event's payload (a JSON array is scanned whole).
PAYLOADS = {"sse": sse, "ndjson": ndjson, "eventstream": eventstream}


def main(framing: str, path: str) -> int:
    with open(path, "rb") as file:
        body = file.read()
    if framing == "json-array":
        return json_array(body)
    payloads = PAYLOADS[framing](body)
    count = 0
    for payload in payloads:
        json.loads(bytes(payload))
        count += 1
    return count


def bound(framing: str, path: str) -> int:
    """`main` with orjson, then what was parsed written out, indented."""
    import orjson

    with open(path, "rb") as file:
        body = file.read()
    if framing == "json-array":
        parsed = orjson.loads(body)
    else:
        parsed = [orjson.loads(payload) for payload in PAYLOADS[framing](body)]
    sys.stdout.buffer.write(orjson.dumps(parsed, option=orjson.OPT_INDENT_2))
    return len(parsed)


if __name__ == "__main__":
    if sys.argv[1] == "--bound":
        bound(sys.argv[2], sys.argv[3])
    else:
        print(main(sys.argv[1], sys.argv[2]))
