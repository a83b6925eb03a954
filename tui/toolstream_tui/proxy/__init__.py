"""`toolstream-tui proxy`, below its command, followed down the way a proxied
response is: the list of requests a screen or a report is made from (`requests`),
the watching side that starts the forwarding process and reads its pipe
(`server`), the forwarding process itself, an ASGI app (`forwarder`), relaying one
response with backpressure (`relay`), the HTTP client to upstream (`upstream`),
a request recorded as it passes (`recording`), the pipe between the two processes
and what goes down it (`pipe`), the settings (`config`) and the pure HTTP rules
(`http_rules`). Nothing imports back up that list."""
