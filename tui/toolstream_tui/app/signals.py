"""Signals from outside the app: it quits as a person quitting it would."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable

QUIT_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def quit_on_signals(quit: Callable[[int], object]) -> None:
    """`kill` (SIGTERM), or Ctrl-C sent from outside (SIGINT; in the app the
    terminal's own is a key), calls `quit(number)` on the running loop instead of
    ending the process with the terminal still in the app's screen."""
    loop = asyncio.get_running_loop()
    # Where a loop cannot take signals (Windows, a thread other than the main
    # one) they keep their default effect.
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        for number in QUIT_SIGNALS:
            loop.add_signal_handler(number, quit, number)
