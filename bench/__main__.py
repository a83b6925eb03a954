"""`python -m bench COMMAND`, from the repository's root:

app         the app in a real terminal against headless: issue 12's table
throughput  the core, whole processes and the app in process on generated streams
dialects    the new dialects' headless runs against their framing's floor process
preview     what the live preview costs on the stub's huge-args scenario
otlp        headless replays without and with --otlp, in paired rounds
readme      put the app table (bench/app-results.md) into docs/performance/index.md
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path


def readme(argv: Sequence[str]) -> int:
    from . import app, report

    parser = argparse.ArgumentParser(prog="python -m bench readme", description=README_HELP)
    parser.add_argument("--json", type=Path, default=app.DEFAULT_JSON, help="an app run's results")
    parser.add_argument("--page", type=Path, default=PERFORMANCE_PAGE, help="the docs page")
    parser.add_argument("--write", action="store_true", help="write the page (else print)")
    args = parser.parse_args(argv)
    body = report.markdown(json.loads(args.json.read_text(encoding="utf-8")))
    if not args.write:
        print(body, end="")
        return 0
    report.write_section(args.page, body)
    print(f"{args.page}: the app section from {args.json}")
    return 0


PERFORMANCE_PAGE = Path(__file__).resolve().parent.parent / "docs" / "performance" / "index.md"
README_HELP = "Replace the docs performance page's app section with the app benchmark's table."


def main(argv: Sequence[str] | None = None) -> int:
    from .environment import forget_keys

    forget_keys()
    argv = list(sys.argv[1:] if argv is None else argv)
    command, rest = (argv[0], argv[1:]) if argv else ("", [])
    if command == "app":
        from . import app

        return app.main(rest)
    if command == "throughput":
        from . import throughput

        return throughput.main(rest)
    if command == "dialects":
        from . import dialects

        return dialects.main(rest)
    if command == "preview":
        from . import preview

        preview.main()
        return 0
    if command == "otlp":
        from . import otlp

        return otlp.main(rest)
    if command == "readme":
        return readme(rest)
    print(__doc__, file=sys.stderr)
    return 0 if command in ("-h", "--help") else 2


if __name__ == "__main__":
    sys.exit(main())
