"""A preview of a call's arguments while they stream: what the text so far
gives if it ended here, from jiter's partial mode (an unfinished string is
kept, an unfinished key or literal is dropped), or, for a call that comes as
pieces at JSON paths, what its pieces so far assemble to. Never the answer: the call's
value comes only from the strict parse at the finish.

Parsing the whole buffer on every fragment would cost the square of its size,
so a preview is re-parsed only when the buffer has grown by a fraction of what
was last parsed (the total stays within a constant times the final size), or
after a quiet moment so a slow stream does not leave it stale.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final

import jiter

from .dialects.gemini import assembled_from_lines
from .surrogates import well_formed

GROWTH = 0.125  # re-parse once the buffer has grown by this fraction
CATCH_UP_SECONDS = 0.25  # or when this long has passed since the last parse
PARTIAL_MODE: Final = "trailing-strings"


class ArgumentsPreview:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        """`clock` paces the catch-up parse only; it is never displayed."""
        self._clock = clock
        self.value: Any = None
        self.error: str | None = None  # why the latest text gives no value
        self.length = 0  # characters of the buffer the preview reflects
        self.parses = 0
        self.parsed_chars = 0  # the work done, for measuring the throttle
        self._parsed_at = float("-inf")

    def due(self, length: int, exact: bool = False) -> bool:
        """Is a parse of a buffer of `length` characters worth its cost now?
        `exact`: always, if it grew (a person stepping through a stream)."""
        grown = length - self.length
        if grown <= 0:
            return False
        if exact or grown >= self.length * GROWTH:
            return True
        return self._clock() - self._parsed_at >= CATCH_UP_SECONDS

    def update(self, text: str, pieces: bool = False) -> None:
        """`pieces`: the text is a call's pieces, one line each (Vertex AI's
        partialArgs): the preview is what they assemble to so far."""
        self.parses += 1
        self.parsed_chars += len(text)
        self.length = len(text)
        self._parsed_at = self._clock()
        if not text.strip():
            self.value, self.error = None, None
            return
        if pieces:
            self.value, self.error = assembled_from_lines(text), None
            return
        try:
            self.value = jiter.from_json(
                well_formed(text).encode("utf-8"),  # a UTF-16 pair cut between fragments
                partial_mode=PARTIAL_MODE,
                cache_mode="none",
            )
            self.error = None
        except ValueError as exc:  # not the start of any JSON value; keep the last preview
            self.error = str(exc)
