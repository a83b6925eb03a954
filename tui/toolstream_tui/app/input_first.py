"""An app that answers a person before it reads more of its streams."""

from __future__ import annotations

from collections.abc import Mapping

from textual import events
from textual.actions import ActionParseResult
from textual.app import App
from textual.dom import DOMNode

from ..sources.pacing import InputFirstPacer


class InputFirstApp(App[int]):
    """Its streams are pumped with `pacer`: a key or a click holds them until the
    action it ran is drawn. The screen shares one event loop with the pumps, and
    a key's way to the screen takes several turns of it."""

    def __init__(self) -> None:
        super().__init__()
        self.pacer = InputFirstPacer()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key | events.MouseDown) and not event.is_forwarded:
            self.pacer.hold()
        await super().on_event(event)

    async def run_action(
        self,
        action: str | ActionParseResult,
        default_namespace: DOMNode | None = None,
        namespaces: Mapping[str, DOMNode] | None = None,
    ) -> bool:
        """An action's effect is drawn before the pumps take the loop again."""
        try:
            return await super().run_action(action, default_namespace, namespaces)
        finally:
            if self.pacer.held:
                # Widgets tell the screen what they changed only when their own
                # queues next run, so a screen that looks idle right after the action
                # may not have heard yet: the second round waits for its frame.
                self.call_after_refresh(self.call_after_refresh, self.pacer.release)
