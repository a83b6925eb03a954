"""The console script `toolstream-tui`: argv to a command (watch, `diff`, `proxy`),
each imported only when asked for."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import NoReturn

from .core.exit_codes import EXIT_BROKEN_PIPE
from .process import (
    OutputFailed,
    exit_now,
    output_failed,
    prepare_standard_streams,
    stop_writing_stdout,
)


def run() -> NoReturn:
    """The console script: `main`, then the process ends at once (`exit_now`). The
    proxy, which stops a forwarder process and closes recordings as it shuts down,
    leaves as Python does."""
    argv = sys.argv[1:]
    prepare_standard_streams()
    try:
        code = main(argv)
    except BrokenPipeError:  # a listing or a diff cut short by its reader
        stop_writing_stdout()
        code = EXIT_BROKEN_PIPE
    except OutputFailed as failure:  # a listing or a diff refused by a full disk
        code = output_failed(failure)
    if argv[:1] == ["proxy"]:
        sys.exit(code)
    exit_now(code)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["diff"]:
        from .commands.diff import main_diff

        return main_diff(argv[1:])
    if argv[:1] == ["proxy"]:
        from .commands.proxy import main_proxy

        return main_proxy(argv[1:])
    from .commands.watch import main_watch

    return main_watch(argv)


if __name__ == "__main__":
    sys.exit(main())
