"""API keys: sent the way each provider expects, and never written anywhere.

Every secret the request carries (auth headers, key-like query parameters) is
replaced by `[REDACTED]` in the source label, error messages, recordings and
the response bytes themselves (a server or a model may echo a key back: see
core/redact.py), before anything downstream sees them."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from contextlib import aclosing
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from ..core.redact import REDACTED, SecretPattern, SecretScrubber
from .base import BodyChunk, RequestSent, ResponseHead, SourceItems, TransportError
from .key_variables import BEDROCK_KEY, WELL_KNOWN_KEYS, keys_set

ANTHROPIC_VERSION = "2023-06-01"
SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie"}
)
# A request header is a credential too when a word of its name says so
# (Ocp-Apim-Subscription-Key, X-Auth-Token, X-Amz-Security-Token); whole words
# only, so that x-ratelimit-remaining-tokens stays a count.
SECRET_NAME_WORDS = frozenset(
    {"key", "apikey", "token", "secret", "password", "auth", "credential", "credentials"}
    | {"signature", "session", "cookie"}
)
# Never kept from a response: a cookie is a credential too.
PRIVATE_RESPONSE_HEADERS = SECRET_HEADERS | {"set-cookie", "set-cookie2"}
SECRET_QUERY = frozenset({"key", "api_key", "apikey", "api-key", "token", "access_token"})
BEDROCK_HOST = re.compile(r"bedrock-runtime(?:-fips)?\.[a-z0-9-]+\.amazonaws\.com")
# A URL's user name alone is a token (https://TOKEN@host) only when it is this long:
# a short one is a name, and redacting it would blank ordinary words.
TOKEN_AS_USER_MIN = 16
GEMINI_METHOD = re.compile(r"/models/[^/]+:(?:stream)?[gG]enerateContent$")
# Bedrock's runtime operations on a model: …/model/MODEL_ID/OPERATION.
BEDROCK_MODEL_OPERATION = re.compile(
    r"/model/([^/]+)/(?:converse-stream|converse|invoke-with-response-stream|invoke)$"
)
URLS_KEPT = 64  # a redactor's redacted URLs, for the requests that ask for the same again
# A query that parse_qsl and urlencode give back as it is: name=value pairs of
# characters neither of them changes.
PLAIN_QUERY = re.compile(r"[\w.~\[\]-]*=[\w.~\[\]-]*(?:&[\w.~\[\]-]*=[\w.~\[\]-]*)*", re.ASCII)


def scrubbed_reads(scrubber: SecretScrubber, read: BodyChunk) -> list[BodyChunk]:
    """What one read gives once scrubbed: the events it let through, each at the
    time of the read that brought it (an event held back for the next piece of its
    text keeps its own). A read that let nothing through still gives a chunk, so
    that whoever waits on the stream (an --idle-timeout) sees it go on: at its own
    time, or while events are held at theirs (times never go back)."""
    chunks = [BodyChunk(data, t) for data, t in scrubber.feed_timed(read.data, read.t)]
    if not chunks:
        held = scrubber.held_since
        chunks.append(BodyChunk(b"", read.t if held is None else held))
    return chunks


class MissingKey(Exception):
    pass


def speaks_anthropic(url: str, dialect: str | None) -> bool:
    parts = urlsplit(url)
    return dialect == "anthropic" or (
        dialect is None
        and (parts.hostname == "api.anthropic.com" or parts.path.rstrip("/").endswith("/messages"))
    )


def speaks_gemini(url: str, dialect: str | None) -> bool:
    """The Gemini API takes its key as `x-goog-api-key` (Vertex AI, under
    `/projects/`, takes OAuth bearer tokens instead)."""
    path = urlsplit(url).path
    if "/projects/" in path:
        return False
    return dialect == "gemini" or (dialect is None and bool(GEMINI_METHOD.search(path)))


def model_in_path(path: str) -> str | None:
    """The model a URL path names: Gemini's and Vertex AI's
    `…/models/MODEL:generateContent` (or `:streamGenerateContent`), Bedrock's
    `…/model/MODEL_ID/converse` (`converse-stream`, `invoke`,
    `invoke-with-response-stream`), its id URL-decoded (an ARN's `%3A`, `%2F`)."""
    if gemini := GEMINI_METHOD.search(path):
        named = gemini.group().removeprefix("/models/").rpartition(":")[0]
    elif bedrock := BEDROCK_MODEL_OPERATION.search(path):
        named = bedrock.group(1)
    else:
        return None
    return unquote(named) or None


def usual_key_variables(url: str) -> tuple[str, ...]:
    host = urlsplit(url).hostname or ""
    return BEDROCK_KEY if BEDROCK_HOST.fullmatch(host) else WELL_KNOWN_KEYS.get(host, ())


def auth_headers(
    url: str, dialect: str | None, key_env: str | None, environ: Mapping[str, str]
) -> dict[str, str]:
    """Headers carrying the key from `key_env`, or from the usual variable when the
    URL is a well-known provider's; empty when there is no key to send."""
    variables = (key_env,) if key_env is not None else usual_key_variables(url)
    key = next((environ[name] for name in variables if environ.get(name)), None)
    if not key:
        if key_env is not None:
            said = "is empty" if key_env in environ else "is not set"
            raise MissingKey(f"environment variable {key_env!r} {said}")
        return {}
    if speaks_anthropic(url, dialect):
        return {"x-api-key": key, "anthropic-version": ANTHROPIC_VERSION}
    if speaks_gemini(url, dialect):
        return {"x-goog-api-key": key}
    return {"Authorization": f"Bearer {key}"}


def is_secret_header(name: str) -> bool:
    lowered = name.lower()
    return lowered in SECRET_HEADERS or not SECRET_NAME_WORDS.isdisjoint(re.split(r"[-_]", lowered))


def secrets_in(
    url: str, headers: Mapping[str, str], environ: Mapping[str, str] = os.environ
) -> list[str]:
    """The secrets of a request to `url` with `headers`, and the keys in `environ`.
    Each also without the white space around it: a key read from a file with its
    line end, or sent after two spaces, is echoed back without them."""
    found = keys_set(environ)
    for name, value in headers.items():
        if is_secret_header(name):
            found.append(value)
            scheme, _, credential = value.strip().partition(" ")
            if scheme.lower() in ("bearer", "basic", "token"):
                found.append(credential)
    found += _userinfo_secrets(url)
    query = _query(url)
    if may_name_a_secret(query):
        for name, value in parse_qsl(query, keep_blank_values=True):
            if name.lower() in SECRET_QUERY:
                found.append(value)
    found += [secret.strip() for secret in found]
    return [secret for secret in dict.fromkeys(found) if secret.strip()]


def _userinfo_secrets(url: str) -> list[str]:
    """A password in the URL (user:password@host), as written and as sent; a user
    name alone when it is long enough to be a token."""
    if "@" not in url:
        return []
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    if parts.password:
        return [parts.password, unquote(parts.password)]
    user = parts.username or ""
    return [user, unquote(user)] if len(user) >= TOKEN_AS_USER_MIN else []


def may_name_a_secret(query: str) -> bool:
    """False when no parameter of `query` can be one of SECRET_QUERY, seen without
    parsing it: each such name, lowercased, is in the lowercased query unless it
    is percent-encoded there."""
    lowered = query.lower()
    return "%" in query or any(name in lowered for name in SECRET_QUERY)


def _query(url: str) -> str:
    """The URL's query, also from a URL too broken for urlsplit (an unclosed `[`)."""
    if "?" not in url:  # no query to split out (the proxy's requests, most often)
        return ""
    try:
        return urlsplit(url).query
    except ValueError:
        return url.partition("#")[0].partition("?")[2]


def safe_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The headers without credentials (auth headers, cookies): what may be kept."""
    return {
        name: value
        for name, value in headers.items()
        if name.lower() not in PRIVATE_RESPONSE_HEADERS
    }


class Redactor:
    """Removes the request's secrets from everything a source yields."""

    def __init__(self, secrets: Iterable[str], dialect: str | None = None) -> None:
        self.pattern = SecretPattern(secrets)
        self.secrets = self.pattern.secrets
        self.dialect = dialect  # the shadow reading of the body uses the watch's dialect
        self._urls: dict[str, str] = {}

    def text(self, text: str) -> str:
        """`text` with every spelling of a secret (literal or JSON-escaped) replaced."""
        return self.pattern.redact_text(text)

    def url(self, url: str) -> str:
        """`url` with its secret query parameters and every spelling of a secret
        replaced. Kept for the next request to the same URL: the proxy's redactor
        serves every request that carries the same key, and each redacts its URL
        twice (a split, a rejoin and a search for every secret)."""
        redacted = self._urls.get(url)
        if redacted is None:
            if len(self._urls) >= URLS_KEPT:
                self._urls.clear()
            redacted = self._urls[url] = self._redacted_url(url)
        return redacted

    def _redacted_url(self, url: str) -> str:
        try:
            parts = urlsplit(url)
        except ValueError:  # too broken to take apart; its secrets are replaced all the same
            return self.text(url)
        if PLAIN_QUERY.fullmatch(parts.query) and not may_name_a_secret(parts.query):
            return self.text(urlunsplit(parts))  # what parsing the query would give back
        query = [
            (name, REDACTED if name.lower() in SECRET_QUERY else value)
            for name, value in parse_qsl(parts.query, keep_blank_values=True)
        ]
        safe_query = urlencode(query, safe="[]") if query else parts.query
        return self.text(urlunsplit(parts._replace(query=safe_query)))

    def headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        return {
            name: REDACTED if is_secret_header(name) else self.text(value)
            for name, value in headers.items()
        }

    def request(self, sent: RequestSent) -> RequestSent:
        body = None if sent.body is None else self.text(sent.body)
        return RequestSent(sent.method, self.url(sent.url), self.headers(sent.headers), body)

    def head(self, head: ResponseHead) -> ResponseHead:
        """The response head with no secret in its URL, reason, headers or redirects."""
        return ResponseHead(
            head.status,
            head.content_type,
            self.text(head.reason),
            self.url(head.url),
            self.headers(head.headers) if head.headers else head.headers,
            tuple(map(self.url, head.redirects)),
            head.t,
        )

    def stream(self, items: SourceItems) -> SourceItems:
        """The items with every secret removed from the body (see core/redact.py:
        whole, JSON-escaped, or cut across reads or across deltas) and from
        messages. Without a secret, the items themselves: no cost per read."""
        return self._scrubbed(items) if self.pattern else items

    async def _scrubbed(self, items: SourceItems) -> SourceItems:
        scrubber: SecretScrubber | None = None
        async with aclosing(items):
            async for item in items:
                if isinstance(item, RequestSent):
                    item = self.request(item)
                elif isinstance(item, ResponseHead):
                    item = self.head(item)
                    scrubber = SecretScrubber(self.pattern, self.dialect)
                    scrubber.open(item.status, item.content_type)
                elif isinstance(item, BodyChunk):
                    if scrubber is None:  # a body without a head: read it as untyped
                        scrubber = SecretScrubber(self.pattern, self.dialect)
                        scrubber.open(200, "")
                    for chunk in scrubbed_reads(scrubber, item):
                        yield chunk
                    continue
                elif scrubber is not None:
                    rest, scrubber = scrubber.close_timed(), None
                    for released in rest:
                        yield BodyChunk(*released)
                if isinstance(item, TransportError):
                    item = TransportError(self.text(item.message), item.t, item.kind)
                yield item
        if scrubber is not None:
            for released in scrubber.close_timed():
                yield BodyChunk(*released)
