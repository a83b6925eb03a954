"""Textual's footer, rebuilt only when the keys it shows change, showing only
the keys that fit whole."""

from __future__ import annotations

from collections.abc import Hashable

from textual.app import App
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer

PALETTE_CLASS = "-command-palette"  # Textual's class for the footer's ^p key


class KeyFooter(Footer):
    """Textual's footer rebuilds its keys whenever its screen's bindings are
    refreshed: on every return to the screen and every change of focus. Each
    rebuild mounts new key widgets, which lays out the whole screen; over the
    stream's lanes that was three layouts after the inspector closed, and the
    key waited behind them. This one rebuilds only when the keys differ.

    Textual's footer also lays out every key in a row however narrow the
    terminal, cutting the last ones mid-word (`b Bundl`, `? K`), and adds or
    drops `^p` only at its next rebuild. This one leaves out the keys that do
    not fit whole (`keys_that_fit`) and rebuilds when `^p` comes or goes."""

    def __init__(self, *, compact: bool = False, keys_held: bool = False) -> None:
        """`keys_held`: no keys until `show_keys` (building them takes a screen's
        first frame some 40 ms, which the stream's first text need not wait for)."""
        super().__init__(compact=compact)
        self._shown: Hashable | None = None
        self.keys_held = keys_held
        self._rebuilding = False

    @property
    def keys_settled(self) -> bool:
        """The keys are shown as they stand: none held, no rebuild under way."""
        return not self.keys_held and not self._rebuilding

    def show_keys(self) -> None:
        """The keys held back are built, and shown from the next frame."""
        if self.keys_held:
            self.keys_held, self._rebuilding = False, True
            # Built from the footer's own queue: Textual binds each key's data to
            # the widget whose handler is running.
            self.call_later(self._build_held_keys)

    def _build_held_keys(self) -> None:
        self._rebuilding = False
        if self.is_attached:
            self.bindings_changed(self.screen)

    def bindings_changed(self, screen: Screen[object]) -> None:
        if self.keys_held:
            return  # `show_keys` builds them as the bindings then stand
        keys = self.keys_of(screen)
        if keys == self._shown:
            return
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self._shown = keys  # Textual's footer recomposes only in this case
            self._rebuilding = True
        super().bindings_changed(screen)

    def keys_of(self, screen: Screen[object]) -> Hashable:
        """What the footer would show for the screen's bindings now."""
        palette = screen.app.COMMAND_PALETTE_BINDING
        shown = tuple(
            (key, binding.action, binding.description, enabled, tooltip)
            for key, (_node, binding, enabled, tooltip) in screen.active_bindings.items()
            if binding.show or key == palette
        )
        return shown, self.show_command_palette, self.compact

    def watch_show_command_palette(self) -> None:
        if self._shown is not None and self.is_attached:
            self.bindings_changed(self.screen)

    async def recompose(self) -> None:
        await super().recompose()
        self._rebuilding = False
        self._fit_keys()

    def on_resize(self) -> None:
        self._fit_keys()

    def _fit_keys(self) -> None:
        """Shows the keys that fit whole beside `^p` (when shown), hides the others."""
        if not self.size.width or not self.is_attached:
            return
        palette = [child for child in self.children if child.has_class(PALETTE_CLASS)]
        keys = [child for child in self.children if not child.has_class(PALETTE_CLASS)]
        room = self.size.width - sum(self._cells_of(key) for key in palette)
        app_owned = self._app_owned(len(keys))
        fitting = keys_that_fit([self._cells_of(key) for key in keys], app_owned, room)
        for key, fits in zip(keys, fitting, strict=True):
            key.display = fits

    def _cells_of(self, key: Widget) -> int:
        """The columns `key` takes in the footer's row, its margins included."""
        styles = key.styles
        width = key.get_content_width(self.size, self.app.size)
        return width + styles.gutter.width + styles.margin.width

    def _app_owned(self, count: int) -> list[bool]:
        """For each of the `count` keys shown, whether the app binds it (quit, the
        keys help) rather than the screen. The footer shows one key per action,
        in the order of the bindings; when it grouped some (never here), none is."""
        owners: dict[str, bool] = {}
        for node, binding, _enabled, _tooltip in self.screen.active_bindings.values():
            if binding.show:
                owners.setdefault(binding.action, isinstance(node, App))
        owned = list(owners.values())
        return owned if len(owned) == count else [False] * count


def keys_that_fit(widths: list[int], app_owned: list[bool], room: int) -> list[bool]:
    """Which keys of `widths` columns each to show in `room` columns: all if they
    fit; else the screen's own keys are left out from the right, then the app's
    from the left, so quit and `?` (which lists every key) stay longest."""
    shown = [True] * len(widths)
    screen_first = [n for n in reversed(range(len(widths))) if not app_owned[n]]
    app_last = [n for n in range(len(widths)) if app_owned[n]]
    used = sum(widths)
    for number in [*screen_first, *app_last]:
        if used <= room:
            break
        shown[number] = False
        used -= widths[number]
    return shown
