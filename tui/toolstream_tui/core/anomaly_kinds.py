"""Every kind of anomaly the core can name: those any stream can show, and each
dialect's own (`Dialect.anomaly_kinds`). What `--fail-on` accepts and the README's
table documents (tests hold both to this list)."""

from __future__ import annotations

from .dialects.detect import DIALECTS

COMMON = frozenset(
    {
        "arguments-not-object",
        "call-after-finish",
        "client-gone",
        "connection-lost",
        "content-type-not-sse",
        "data-not-json",
        "dialect-unknown",
        "error-event",
        "event-type-mismatch",
        "fragment-after-complete-json",
        "fragment-after-finish",
        "frame-invalid",
        "index-gap",
        "index-out-of-range",
        "idle-timeout",
        "invalid-utf8",
        "limit-reached",
        "lone-surrogate",
        "redirected",
        "schema-mismatch",
        "tool-declaration-invalid",
        "unexpected-shape",
        "unknown-delta",
        "unknown-event",
        "unknown-tool",
        "unterminated-event",
        "watch-gap",
    }
)
ANOMALY_KINDS = COMMON.union(*(dialect.anomaly_kinds for dialect in DIALECTS.values()))
