"""The Textual app: a thin shell that pumps a source into a `WatchedStream` in a worker
and shows it on a `StreamScreen`, which draws from the core's state."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterable
from typing import Any

from textual import work
from textual.app import SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from ...core import StreamSession, exit_code
from ...core.visible import inert
from ...process import tune_garbage_collector
from ...sources import Source
from ...watching.options import WatchOptions
from ...watching.stream import WatchedStream
from ..input_first import InputFirstApp
from ..screens.stream import CSS_FILE, StreamScreen
from ..signals import quit_on_signals


class ToolstreamApp(InputFirstApp):
    TITLE = "toolstream-tui"
    # The stream screen's CSS, read with Textual's own before the first frame: a
    # screen bringing CSS the app has not read makes Textual parse every stylesheet
    # read so far again, as the screen is pushed.
    CSS_PATH = CSS_FILE
    BINDINGS = [
        Binding("q", "quit", "Quit", id="quit"),
        Binding("question_mark,f1", "toggle_keys", "Keys", id="keys", key_display="?"),
    ]

    def __init__(self, source: Source, options: WatchOptions | None = None) -> None:
        super().__init__()
        self.source = source
        self.options = options or WatchOptions()
        self.theme = self.options.theme
        self.watched = WatchedStream(source.label, self.options)
        self.stream = StreamScreen(self.watched, restart=self.restart)
        self.said_at_exit: list[str] = []  # printed once the terminal is given back
        self.quit_by_signal: int | None = None
        self.quit_before_end = False

    @property
    def session(self) -> StreamSession:
        return self.watched.session

    @property
    def settled_event(self) -> asyncio.Event:
        return self.stream.settled_event

    def on_mount(self) -> None:
        self.push_screen(self.stream)
        if self.options.notice:
            self.notify(self.options.notice, severity="warning", timeout=10)
        quit_on_signals(self.quit_on_signal)
        self.run_stream()

    def quit_on_signal(self, number: int) -> None:
        """As `q` does: the terminal given back, --bundle written."""
        self.quit_by_signal = number
        self.call_later(self.action_quit)

    @work(group="stream", exclusive=True, exit_on_error=False)
    async def run_stream(self) -> None:
        await self.watched.run(self.source, self.options.record, self.say_error, self.pacer)

    def say_error(self, message: str) -> None:
        """Something beside the stream failed (its recording): said, the stream goes on."""
        self.notify(message, severity="error")

    def restart(self) -> WatchedStream:
        """The stream again from the start, in a new watch."""
        self.workers.cancel_group(self, "stream")
        self.watched.close()
        self.watched = WatchedStream(self.source.label, self.options)
        self.run_stream()
        return self.watched

    def action_toggle_keys(self) -> None:
        """The keys of what has focus, beside the screen (Textual's help panel)."""
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()

    async def action_quit(self) -> None:
        """Quit; with --bundle, a stream not yet over is bundled as it stands."""
        # Quitting before the end is no failure, even once --bundle has cut the
        # stream there to bundle it.
        self.quit_before_end = not self.session.ended
        said = self.stream.bundle_on_quit()
        if said:
            self.said_at_exit.append(said)
        # Focus on nothing first: Textual tears the screen down widget by widget,
        # moving focus (and restyling what gets it) each time the focused one goes.
        self.screen.set_focus(None)
        self.exit(self.return_code)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        for command in super().get_system_commands(screen):
            if command.title != "Screenshot":  # Textual's writes to ~/Downloads; ours below
                yield command
        for binding in StreamScreen.BINDINGS:
            if isinstance(binding, Binding) and self.stream.check_action(binding.action, ()):
                action = binding.action
                yield SystemCommand(
                    binding.description,
                    f"{binding.tooltip} [{binding.key_display or binding.key}]",
                    lambda action=action: self.stream.run_action(action),
                )


def run_app(source: Source, options: WatchOptions) -> int:
    tune_garbage_collector()
    app = ToolstreamApp(source, options)
    app.run()
    if options.otlp is not None:  # what is still queued leaves now, or is counted
        options.otlp.close()
        app.said_at_exit.append(options.otlp.summary())
    for line in app.said_at_exit:
        print(f"toolstream-tui: {inert(line)}", file=sys.stderr)
    return exit_status(app)


def exit_status(app: ToolstreamApp) -> int:
    """The app's own code, else the stream's as headless gives it once the stream has
    ended (quitting before the end is not a failure); 128 + N after signal N, as
    a shell reports a process the signal ended."""
    if app.quit_by_signal is not None:
        return 128 + app.quit_by_signal
    if app.return_code:
        return app.return_code
    return exit_code(app.session.state) if app.session.ended and not app.quit_before_end else 0
