"""What the screen has not shown yet. The stream runs ahead at network speed;
the display takes everything on each tick, or, while paused, one wire event
(with all it caused) per step."""

from __future__ import annotations

from collections import deque

from ..core.events import StreamEvent, WireComment, WireEvent


class DisplayQueue:
    def __init__(self) -> None:
        self._events: deque[StreamEvent] = deque()

    def push(self, events: list[StreamEvent]) -> None:
        self._events.extend(events)

    def __len__(self) -> int:
        return len(self._events)

    def take_all(self) -> list[StreamEvent]:
        events = list(self._events)
        self._events.clear()
        return events

    def take_step(self) -> list[StreamEvent]:
        """Up to and including the next wire event, plus everything it caused."""
        taken: list[StreamEvent] = []
        events = self._events
        while events:
            event = events.popleft()
            taken.append(event)
            if isinstance(event, WireEvent):
                break
        while events and not isinstance(events[0], WireEvent | WireComment):
            taken.append(events.popleft())
        return taken
