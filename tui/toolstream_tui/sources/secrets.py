"""API keys: sent the way each provider expects, and never written anywhere.

Every secret the request carries (auth headers, key-like query parameters) is
replaced by `[REDACTED]` in the source label, error messages, recordings and
the response bytes themselves (a server may echo a key back), before anything
downstream sees them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import aclosing
from dataclasses import replace
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .base import BodyChunk, SourceItem, TransportError

REDACTED = "[REDACTED]"
ANTHROPIC_VERSION = "2023-06-01"
SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie"}
)
# Never kept from a response: a cookie is a credential too.
PRIVATE_RESPONSE_HEADERS = SECRET_HEADERS | {"set-cookie", "set-cookie2"}
SECRET_QUERY = frozenset({"key", "api_key", "apikey", "api-key", "token", "access_token"})
WELL_KNOWN_KEYS = {"api.openai.com": "OPENAI_API_KEY", "api.anthropic.com": "ANTHROPIC_API_KEY"}
MIN_SECRET = 4  # shorter values would redact ordinary text


class MissingKey(Exception):
    pass


def speaks_anthropic(url: str, dialect: str | None) -> bool:
    parts = urlsplit(url)
    return dialect == "anthropic" or (
        dialect is None
        and (parts.hostname == "api.anthropic.com" or parts.path.rstrip("/").endswith("/messages"))
    )


def auth_headers(
    url: str, dialect: str | None, key_env: str | None, environ: Mapping[str, str]
) -> dict[str, str]:
    """Headers carrying the key from `key_env`, or from the usual variable when the
    URL is a well-known provider's; empty when there is no key to send."""
    explicit = key_env is not None
    key_env = key_env or WELL_KNOWN_KEYS.get(urlsplit(url).hostname or "")
    key = environ.get(key_env) if key_env else None
    if not key:
        if explicit:
            raise MissingKey(f"environment variable {key_env} is not set")
        return {}
    if speaks_anthropic(url, dialect):
        return {"x-api-key": key, "anthropic-version": ANTHROPIC_VERSION}
    return {"Authorization": f"Bearer {key}"}


def secrets_in(url: str, headers: Mapping[str, str]) -> list[str]:
    found = []
    for name, value in headers.items():
        if name.lower() in SECRET_HEADERS:
            found.append(value)
            scheme, _, credential = value.partition(" ")
            if credential and scheme.lower() in ("bearer", "basic", "token"):
                found.append(credential)
    for name, value in parse_qsl(urlsplit(url).query, keep_blank_values=True):
        if name.lower() in SECRET_QUERY:
            found.append(value)
    return found


def safe_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The headers without credentials (auth headers, cookies): what may be kept."""
    return {
        name: value
        for name, value in headers.items()
        if name.lower() not in PRIVATE_RESPONSE_HEADERS
    }


class Redactor:
    def __init__(self, secrets: Iterable[str]) -> None:
        unique = {secret for secret in secrets if len(secret) >= MIN_SECRET}
        self.secrets = sorted(unique, key=len, reverse=True)
        self._secret_bytes = [secret.encode() for secret in self.secrets]
        self.longest = max((len(secret) for secret in self._secret_bytes), default=0)

    def text(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return text

    def data(self, data: bytes) -> bytes:
        for secret in self._secret_bytes:
            data = data.replace(secret, REDACTED.encode())
        return data

    def url(self, url: str) -> str:
        parts = urlsplit(url)
        query = [
            (name, REDACTED if name.lower() in SECRET_QUERY else value)
            for name, value in parse_qsl(parts.query, keep_blank_values=True)
        ]
        safe_query = urlencode(query, safe="[]") if query else parts.query
        return self.text(urlunsplit(parts._replace(query=safe_query)))

    def headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        return {
            name: REDACTED if name.lower() in SECRET_HEADERS else self.text(value)
            for name, value in headers.items()
        }

    def _possible_secret_start(self, data: bytes) -> int:
        """Length of the longest tail of `data` that begins some secret."""
        for length in range(min(len(data), self.longest - 1), 0, -1):
            tail = data[-length:]
            if any(secret.startswith(tail) for secret in self._secret_bytes):
                return length
        return 0

    async def stream(self, items: AsyncIterator[SourceItem]) -> AsyncIterator[SourceItem]:
        """The items with every secret removed from body bytes and messages. A read
        that ends with the start of a secret holds those bytes back until the next
        read, so a secret split across reads is caught too."""
        held = b""
        last_t = 0.0
        async with aclosing(items):
            async for item in items:
                if isinstance(item, BodyChunk):
                    data = self.data(held + item.data)
                    keep = self._possible_secret_start(data)
                    held, ready = data[len(data) - keep :], data[: len(data) - keep]
                    last_t = item.t
                    if ready:
                        yield replace(item, data=ready)
                    continue
                if held:
                    yield BodyChunk(self.data(held), last_t)
                    held = b""
                if isinstance(item, TransportError):
                    item = replace(item, message=self.text(item.message))
                yield item
        if held:
            yield BodyChunk(self.data(held), last_t)
