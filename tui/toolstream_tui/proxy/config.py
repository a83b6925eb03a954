"""The proxy's settings, as the command takes them and both of its processes read
them (the forwarding process gets them as JSON), and the checks of the upstream
URL and the listening address."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import httpx

from .http_rules import HEADER_TIMEOUT_S, MAX_HEADER_BYTES, MAX_REQUEST_BYTES

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787
SHUTDOWN_GRACE_S = 5.0  # requests still streaming at shutdown get this long (--drain)
CONNECT_TIMEOUT_S = 60.0
WATCH_BUFFER_BYTES = 64 << 20  # frames held for a watcher that does not read; past it, dropped
TOKEN_ENV = "TOOLSTREAM_PROXY_TOKEN"  # how the token reaches the forwarder: never in its argv


class UpstreamError(ValueError):
    """The --upstream URL cannot be used."""


def parse_upstream(text: str) -> httpx.URL:
    try:
        url = httpx.URL(text)
    except httpx.InvalidURL as exc:
        raise UpstreamError(f"--upstream {text!r} is not a URL: {exc}") from exc
    if url.scheme not in ("http", "https") or not url.host:
        raise UpstreamError(f"--upstream {text!r} must be an http:// or https:// URL with a host")
    if url.query or url.fragment:
        raise UpstreamError(f"--upstream {text!r} must not carry a query or a fragment")
    if url.userinfo:  # never sent (each client sends its own credentials), never shown
        raise UpstreamError(
            "--upstream must not carry a user or password (user:password@): the proxy "
            "passes on each client's own Authorization"
        )
    return url


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def http_url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


@dataclass(frozen=True, slots=True)
class ProxyConfig:
    upstream: str
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    max_request_bytes: int = MAX_REQUEST_BYTES
    max_header_bytes: int = MAX_HEADER_BYTES
    connect_timeout: float = CONNECT_TIMEOUT_S
    idle_timeout: float | None = None  # cut an upstream silent this long (None: never)
    shutdown_grace: float = SHUTDOWN_GRACE_S
    header_timeout: float = HEADER_TIMEOUT_S
    token: str | None = None  # clients must send Proxy-Authorization: Bearer TOKEN
    record_dir: str | None = None  # the forwarder records each request here
    watch_buffer_bytes: int = WATCH_BUFFER_BYTES
