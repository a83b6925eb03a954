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


def kinds_of(dialect: str) -> frozenset[str]:
    """What a stream of `dialect` can show: the common kinds and the dialect's own."""
    return COMMON | DIALECTS[dialect].anomaly_kinds


def own_kinds(dialect: str) -> frozenset[str]:
    """The kinds only some dialects name, `dialect` among them."""
    return DIALECTS[dialect].anomaly_kinds - COMMON


def dialects_naming(kind: str) -> tuple[str, ...]:
    """The dialects whose streams can show `kind` (all of them for a common kind)."""
    return tuple(sorted(name for name in DIALECTS if kind in kinds_of(name)))
