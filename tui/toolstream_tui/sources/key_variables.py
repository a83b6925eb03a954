"""The environment variables API keys are read from: plain data, light enough for
a replay to ask whether any is set before it loads the redaction machinery."""

from __future__ import annotations

import os
from collections.abc import Mapping

# A well-known provider's host, and the variables its SDK reads the key from (the
# first one set wins, in the SDK's own order).
WELL_KNOWN_KEYS: dict[str, tuple[str, ...]] = {
    "api.openai.com": ("OPENAI_API_KEY",),
    "api.anthropic.com": ("ANTHROPIC_API_KEY",),
    "generativelanguage.googleapis.com": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "api.cohere.com": ("CO_API_KEY",),
    "api.cohere.ai": ("CO_API_KEY",),
}
BEDROCK_KEY = ("AWS_BEARER_TOKEN_BEDROCK",)  # a Bedrock API key is a bearer token
# Every variable a key is read from: its value is a secret wherever it turns up,
# sent or not (a model may echo a key the request never carried).
KEY_VARIABLES = (
    *dict.fromkeys(name for names in WELL_KNOWN_KEYS.values() for name in names),
    *BEDROCK_KEY,
)


def keys_set(environ: Mapping[str, str] = os.environ) -> list[str]:
    """The keys set in `environ`, each as it is written there."""
    return [value for name in KEY_VARIABLES if (value := environ.get(name, "")).strip()]
