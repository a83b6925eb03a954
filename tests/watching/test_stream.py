"""A watched stream: when data last came, whoever feeds its session."""

from __future__ import annotations

from toolstream_tui.core import StreamSession
from toolstream_tui.watching.options import WatchOptions
from toolstream_tui.watching.stream import WatchedStream

CHUNK = b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_session_fed_elsewhere_is_quiet_only_while_nothing_comes() -> None:
    """A proxied request's session is fed by the request list, which tells the
    watch nothing: the stream view said 'no data for 4.3s' while 800 events came."""
    clock = FakeClock()
    session = StreamSession("proxied", live=False)
    session.open(200, "text/event-stream")
    watch = WatchedStream("proxied", WatchOptions(clock=clock), session=session, started=clock())
    clock.now += 2.0
    assert watch.quiet() == 2.0, "nothing came yet"
    session.feed(CHUNK, 2.0)
    clock.now += 0.5
    assert watch.quiet() == 0.0, "data came since the last look"
    clock.now += 3.0
    assert watch.quiet() == 3.0


def test_a_pumped_session_is_quiet_since_the_pump_last_said_data_came() -> None:
    clock = FakeClock()
    watch = WatchedStream("pumped", WatchOptions(clock=clock))
    clock.now += 1.0
    watch.received()
    clock.now += 2.5
    assert watch.quiet() == 2.5
