"""A network source read from the moment it is built, in a thread of its own, so
that its request's round trip and the server's first pauses pass while the app
loads Textual and draws its first frame (which takes all of one core: before,
the app sat idle for the demo's first pause once its screen was up)."""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable
from contextlib import aclosing, suppress
from typing import Any

from .base import Source, SourceItem, SourceItems

# Items held for the app at most: past them the reading thread waits (and the
# connection with it), as the app's own reading does while a key holds it.
BUFFERED_ITEMS = 1_000


class EarlySource:
    """`source`, its first `items()` read ahead by a thread started here; a rerun
    reads the source anew. Items, their arrival times and a failure of the source
    reach the app as they would have without the thread."""

    def __init__(self, source: Source, buffered: int = BUFFERED_ITEMS) -> None:
        self.source = source
        self.label = source.label
        self._buffered = buffered
        self._items: deque[SourceItem] = deque()
        self._changed = threading.Condition()
        self._done = False  # the thread has read its last item
        self._closing = False  # the app stopped reading: so does the thread
        self._error: BaseException | None = None
        self._wake: Callable[[], object] | None = None  # tells the app's loop
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._taken = False
        self._thread = threading.Thread(target=self._read, name="early-source", daemon=True)
        self._thread.start()

    @property
    def redactor(self) -> Any:
        """The source's redaction of its request's secrets, where it has one."""
        return getattr(self.source, "redactor", None)

    # -- the reading thread ---------------------------------------------------------
    def _read(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            with self._changed:
                if self._closing:
                    return
                self._loop, self._task = loop, loop.create_task(self._read_all())
            loop.run_until_complete(self._task)
        except asyncio.CancelledError:
            pass
        finally:
            with self._changed:
                self._done, self._loop = True, None
                self._changed.notify_all()
            loop.close()
            self._tell_app()

    async def _read_all(self) -> None:
        try:
            async with aclosing(self.source.items()) as items:
                async for item in items:
                    if not self._put(item):
                        return
        except Exception as exc:  # the app's reading raises it, as the source would have
            self._error = exc

    def _put(self, item: SourceItem) -> bool:
        with self._changed:
            while len(self._items) >= self._buffered and not self._closing:
                self._changed.wait()
            if self._closing:
                return False
            self._items.append(item)
        self._tell_app()
        return True

    def _tell_app(self) -> None:
        wake = self._wake
        if wake is not None:
            with suppress(RuntimeError):  # the app's loop is closed: nobody is reading
                wake()

    # -- the app's side -------------------------------------------------------------
    async def items(self) -> SourceItems:
        if self._taken:  # a rerun: the source again, read as it always is
            async with aclosing(self.source.items()) as items:
                async for item in items:
                    yield item
            return
        self._taken = True
        loop = asyncio.get_running_loop()
        arrived = asyncio.Event()
        with self._changed:
            self._wake = lambda: loop.call_soon_threadsafe(arrived.set)
        try:
            while True:
                with self._changed:
                    batch = list(self._items)
                    self._items.clear()
                    done = self._done
                    self._changed.notify_all()
                    if not batch and not done:
                        arrived.clear()  # before the lock is let go: no wake-up is missed
                for item in batch:
                    yield item
                if not batch:
                    if done:
                        break
                    await arrived.wait()
            if self._error is not None:
                raise self._error
        finally:
            self.close()

    def close(self) -> None:
        """Stop reading: the source's own reading ends (and closes its connection)."""
        with self._changed:
            self._closing, self._wake = True, None
            self._changed.notify_all()
            loop, task = self._loop, self._task
        if loop is not None and task is not None:
            with suppress(RuntimeError):  # its loop has just closed: the thread is done
                loop.call_soon_threadsafe(task.cancel)
