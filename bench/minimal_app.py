"""The floor under the first-frame figure: a Textual app of one Static, launched
as the bench launches the app (`python bench/minimal_app.py`; ctrl+q quits)."""

from textual.app import App, ComposeResult
from textual.widgets import Static

TEXT = "a minimal Textual app"


class MinimalApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Static(TEXT)


if __name__ == "__main__":
    MinimalApp().run()
