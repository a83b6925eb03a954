"""The Textual UI. Imported only when the UI runs, never by --headless."""

from .apps.watch import ToolstreamApp, run_app

__all__ = ["ToolstreamApp", "run_app"]
