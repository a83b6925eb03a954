"""The embedded stub: starts the stub SSE server on a free loopback port and
watches it over real HTTP, so the first run shows something real."""

from __future__ import annotations

from contextlib import aclosing

from toolstream_stubs import StubServer, load_scenario

from .base import Clock, SourceItems, monotonic
from .http import HttpRequest, HttpSource, trusting_no_certificate


class StubSource:
    def __init__(
        self, scenario: str, speed: float = 1.0, timeout: float = 60.0, clock: Clock = monotonic
    ) -> None:
        self.scenario = scenario
        self.speed = speed
        self.timeout = timeout
        self.label = f"stub:{scenario}"
        self._clock = clock

    async def items(self) -> SourceItems:
        server = StubServer(
            self.scenario,
            speed=self.speed,
            # As fast as possible means no pacing, so no reason to cut the body per event.
            split="whole" if self.speed <= 0 else "event",
        ).start()
        try:
            body = load_scenario(self.scenario).request or b"{}"
            request = HttpRequest(url=server.url, method="POST", body=body, timeout=self.timeout)
            # Plain HTTP on loopback: the system's certificates need not be loaded.
            source = HttpSource(request, self._clock, verify=trusting_no_certificate())
            async with aclosing(source.items()) as items:
                async for item in items:
                    yield item
        finally:
            server.stop()
