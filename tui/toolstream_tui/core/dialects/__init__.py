"""One module per provider's stream dialect, each turning that provider's events into
calls on `StreamState`; `detect` tells which one a stream speaks."""
