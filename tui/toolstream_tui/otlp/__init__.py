"""OpenTelemetry out (`--otlp URL`): one span per request. `spans` maps a report
to a span and `envelope` reads a response's model, id and usage, both without
OpenTelemetry; `export` sends spans with the SDK (the optional `otlp` extra,
imported only when --otlp is given); `watching` wires them to a watch; `option`
is the option, so a command line without --otlp imports none of the others."""


class OtlpUnavailable(Exception):
    """--otlp cannot be used: the extra is missing or the URL is not one to send to."""
