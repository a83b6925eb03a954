"""The Textual UI. Imported only when the UI runs, never by --headless."""

from .app import ToolstreamApp, run_app

__all__ = ["ToolstreamApp", "run_app"]
