"""A local server's context window, where the server says it: vLLM lists `max_model_len` per
model at `/v1/models`; llama.cpp's server gives `n_ctx` at `/props` (under
`default_generation_settings` in recent builds). Asked once per model; a server that says
nothing (Ollama, most hosted APIs) leaves the window to configuration or to a 400 naming it.
Part of the gateway package."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import openai

log = logging.getLogger(__name__)

DISCOVERY_TIMEOUT_S = 5.0


async def discover_window(client: openai.AsyncOpenAI, model: str) -> int | None:
    """`model`'s context window as the server reports it, or None."""
    listed = await _get(client, "/models")
    for entry in (listed or {}).get("data") or []:
        if isinstance(entry, dict) and entry.get("id") == model:
            found = _positive(entry.get("max_model_len"))
            if found is not None:
                return found
    root = str(client.base_url).rstrip("/").removesuffix("/v1")
    props = await _get(client, f"{root}/props")
    if props is None:
        return None
    settings = props.get("default_generation_settings") or {}
    return _positive(settings.get("n_ctx") if isinstance(settings, dict) else None) \
        or _positive(props.get("n_ctx"))


async def _get(client: openai.AsyncOpenAI, path: str) -> dict[str, Any] | None:
    try:
        async with asyncio.timeout(DISCOVERY_TIMEOUT_S):
            found = await client.get(path, cast_to=object,
                                     options={"timeout": DISCOVERY_TIMEOUT_S})
    except (openai.OpenAIError, TimeoutError) as exc:
        log.debug("no context window at %s: %s", path, type(exc).__name__)
        return None
    return found if isinstance(found, dict) else None


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
