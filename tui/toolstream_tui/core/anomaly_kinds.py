"""Every kind of anomaly the core can name: what `--fail-on` accepts and the
README's table documents (tests hold both to this list)."""

from __future__ import annotations

COMMON = frozenset(
    {
        "arguments-not-object",
        "call-after-finish",
        "connection-lost",
        "content-type-not-sse",
        "data-not-json",
        "dialect-unknown",
        "error-event",
        "event-type-mismatch",
        "fragment-after-complete-json",
        "fragment-after-finish",
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
    }
)
CHAT = frozenset(
    {
        "arguments-object",
        "data-after-done",
        "done-missing",
        "extra-choice",
        "finish-missing",
        "finish-stop-with-tools",
        "finish-tools-without-calls",
        "id-changed",
        "id-late",
        "id-missing",
        "id-repeated",
        "index-missing",
        "index-reused",
        "name-changed",
        "name-late",
        "name-missing",
        "name-repeated",
    }
)
ANTHROPIC = frozenset(
    {
        "block-index-reused",
        "block-not-stopped",
        "block-stopped-twice",
        "data-after-stop",
        "delta-after-stop",
        "delta-type-mismatch",
        "delta-without-start",
        "start-input-with-deltas",
        "stop-reason-missing",
        "stop-without-start",
    }
)
RESPONSES = frozenset(
    {
        "data-after-completed",
        "delta-after-done",
        "delta-without-item",
        "done-mismatch",
        "done-without-item",
        "output-index-reused",
        "sequence-gap",
    }
)
ANOMALY_KINDS = COMMON | CHAT | ANTHROPIC | RESPONSES
