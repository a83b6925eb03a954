"""`toolstream-tui proxy`, below its command: the forwarding process (`forwarder`,
with its HTTP client to upstream in `upstream`), the watching side that starts it
and reads its taps (`server`), and the list of requests a screen or a report is
made from (`requests`). Followed down from the command, a proxied response never
climbs back up: requests -> server -> forwarder -> upstream -> sources, core."""
