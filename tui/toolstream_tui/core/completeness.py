"""Tracks, fragment by fragment, whether a JSON buffer already holds a complete
object or array, without parsing it. Cost is proportional to each fragment."""

from __future__ import annotations

import re

_STRUCTURAL = re.compile(r'[{}\[\]"]')
_STRING_SPECIAL = re.compile(r'["\\]')


class JsonCompletion:
    """Follows bracket depth outside strings. `complete` turns true when the
    top-level object or array closes; text after that is the `}{` signature of
    two calls merged into one buffer."""

    __slots__ = ("_depth", "_escape", "_in_string", "complete", "complete_at")

    def __init__(self) -> None:
        self._depth = 0
        self._in_string = False
        self._escape = False
        self.complete = False
        self.complete_at = 0  # characters consumed when the top level closed

    def feed(self, text: str, offset: int) -> bool:
        """Consume the fragment that starts at `offset` in the buffer; return True
        if it carries non-whitespace text after the buffer was already complete."""
        if self.complete:
            return not text.isspace() and text != ""
        pos = 0
        while True:
            if self._in_string:
                if self._escape:
                    if pos >= len(text):
                        return False
                    self._escape = False
                    pos += 1
                match = _STRING_SPECIAL.search(text, pos)
                if match is None:
                    return False
                self._in_string = match.group() != '"'
                self._escape = self._in_string
                pos = match.end()
                continue
            match = _STRUCTURAL.search(text, pos)
            if match is None:
                return False
            char = match.group()
            pos = match.end()
            if char == '"':
                self._in_string = True
            elif char in "{[":
                self._depth += 1
            elif self._depth > 0:  # a stray closer is left for the parse to report
                self._depth -= 1
                if self._depth == 0:
                    self.complete = True
                    self.complete_at = offset + pos
                    rest = text[pos:]
                    return rest != "" and not rest.isspace()
