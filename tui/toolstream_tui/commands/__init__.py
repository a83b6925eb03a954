"""The commands: what each of `toolstream-tui`, `proxy` and `diff` does with its arguments."""
