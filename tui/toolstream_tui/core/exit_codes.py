"""Every exit status of every command, in one table. A status means one thing per
command: a run that the command line stopped (2) is never confused with a stream
that came incomplete (4)."""

# toolstream-tui (watch, open) and toolstream-tui proxy
EXIT_OK = 0  # finished, and every call parsed (and was accepted by its schema)
EXIT_FAILED = 1  # the source failed: could not connect, HTTP error, in-band error, not a stream
EXIT_USAGE = 2  # the command line is wrong (argparse's own status for it)
EXIT_LINT = 3  # the stream was sound, but an anomaly named by --fail-on occurred
EXIT_INCOMPLETE = 4  # truncated, or a call failed to parse (here or at the provider), or its schema

# toolstream-tui diff, as diff(1)
EXIT_IDENTICAL = 0
EXIT_DIFFERENT = 1
EXIT_TROUBLE = 2  # a recording could not be read, the command line is wrong, or the viewer failed

# every command
EXIT_INTERRUPTED = 130  # Ctrl-C: 128 + SIGINT, as a shell reports it
EXIT_BROKEN_PIPE = 141  # the reader of stdout went away: 128 + SIGPIPE
EXIT_OUTPUT_FAILED = 74  # stdout or a --bundle refused a write (a full disk): sysexits EX_IOERR
SIGNAL_BASE = 128  # the app quit on signal N exits 128 + N
