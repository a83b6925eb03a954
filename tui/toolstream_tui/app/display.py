"""What the screen has not shown yet. The stream runs ahead at network speed;
the display takes what it can show within a time budget on each tick (so keys
are still handled while a fast stream floods in), or, while paused, one wire
event (with all it caused) per step."""

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

    def take(self, count: int) -> list[StreamEvent]:
        events = self._events
        if count >= len(events):
            taken = list(events)
            events.clear()
            return taken
        return [events.popleft() for _ in range(count)]

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
