"""Allow `python -m toolstream_stubs`."""

from toolstream_stubs.cli import main

raise SystemExit(main())
