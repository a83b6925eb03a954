"""The request a stream answered: its method, URL, headers and body, every secret
already replaced by the source (auth headers, cookies, key-like query values, and
their spellings inside the body). Opened from the request list (key r)."""

from __future__ import annotations

import json

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ...core.visible import inert, inert_text
from ...sources.base import RequestSent
from ..widgets.key_footer import KeyFooter

SHOWN_BODY_CHARS = 64 * 1024  # past this, the body is cut; its size is said


def request_text(request: RequestSent | None) -> str:
    """The request as plain lines: nothing in it can steer the terminal."""
    if request is None:
        return "the request was not kept"
    lines = [inert(f"{request.method} {request.url}"), ""]
    lines += [inert(f"{name}: {value}") for name, value in request.headers.items()]
    if not request.headers:
        lines.append("(no headers)")
    lines += ["", *body_lines(request.body)]
    return "\n".join(lines)


def body_lines(body: str | None) -> list[str]:
    if not body:
        return ["(no body)"]
    try:
        shown = json.dumps(json.loads(body), indent=2, ensure_ascii=False)
    except ValueError:
        shown = body
    if len(shown) > SHOWN_BODY_CHARS:
        rest = len(shown) - SHOWN_BODY_CHARS
        shown = shown[:SHOWN_BODY_CHARS] + f"\n… {rest} more characters"
    return inert_text(shown).splitlines()


class RequestScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    RequestScreen { align: center middle; }
    RequestScreen > Vertical {
        width: 90%; height: 90%; border: round $primary; background: $surface;
    }
    RequestScreen #request-title { height: 1; background: $panel; padding: 0 1; }
    RequestScreen VerticalScroll { padding: 0 1; }
    """
    BINDINGS = [Binding("escape,r,q", "dismiss", "Close", tooltip="Back to the list")]

    def __init__(self, title: str, request: RequestSent | None) -> None:
        super().__init__()
        self.title_text = title
        self.request = request

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(inert(self.title_text)), id="request-title")
            with VerticalScroll():
                yield Static(Text(request_text(self.request)), id="request-text")
            yield KeyFooter(compact=True)
