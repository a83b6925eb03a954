"""Textual's footer, rebuilt only when the keys it shows change."""

from __future__ import annotations

from collections.abc import Hashable

from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    """Textual's footer rebuilds its keys whenever its screen's bindings are
    refreshed: on every return to the screen and every change of focus. Each
    rebuild mounts new key widgets, which lays out the whole screen; over the
    stream's lanes that was three layouts after the inspector closed, and the
    key waited behind them. This one rebuilds only when the keys differ."""

    def __init__(self, *, compact: bool = False) -> None:
        super().__init__(compact=compact)
        self._shown: Hashable | None = None

    def bindings_changed(self, screen: Screen[object]) -> None:
        keys = self.keys_of(screen)
        if keys == self._shown:
            return
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self._shown = keys  # Textual's footer recomposes only in this case
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
