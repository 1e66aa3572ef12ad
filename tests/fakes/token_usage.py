"""Token accounting as the providers report it: prompt and completion tokens (English runs about
four characters a token), the prompt cache's hits, a reasoning model's hidden tokens, and the
bill they come to.

OpenAI caches prompts of 1,024 tokens or more: a prefix seen before (same model) is read from the
cache, counted in `prompt_tokens_details.cached_tokens` as 1,024 plus a multiple of 128. DeepSeek
caches in 64-token units and also reports `prompt_cache_hit_tokens`/`prompt_cache_miss_tokens`.
"""

from __future__ import annotations

import bisect
import json
from collections import defaultdict, deque
from dataclasses import dataclass

from tests.fakes.chat_requests import Body, message_text

CHARS_PER_TOKEN = 4
TOKENS_PER_MESSAGE = 3  # the chat format's own tokens around each message
CACHE_KEEP = 256  # prompts remembered per model (a real cache forgets after minutes)


def estimate_tokens(text: str) -> int:
    return max(1, len(text) // CHARS_PER_TOKEN)


def minimal_prompt_tokens(body: Body) -> int:
    """The "minimal" fake's count: the messages' characters over four, nothing else."""
    return estimate_tokens("x" * sum(len(message_text(m)) for m in _messages(body)))


def prompt_tokens(body: Body) -> int:
    """What a provider counts: every message's text, the structured-output schema it is given,
    and a few tokens of chat format per message."""
    messages = _messages(body)
    text = sum(len(message_text(m)) for m in messages)
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        text += len(json.dumps(response_format.get("json_schema") or {}))
    return text // CHARS_PER_TOKEN + TOKENS_PER_MESSAGE * len(messages)


def serialized_prompt(body: Body) -> str:
    """The messages in order, as the cache compares them (prefixes of this string)."""
    return "".join(f"<{m.get('role')}>{message_text(m)}</>" for m in _messages(body))


def _messages(body: Body) -> list[Body]:
    return [m for m in body.get("messages") or [] if isinstance(m, dict)]


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix (binary search on slices: C-speed compares)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


class _Seen:
    """The last CACHE_KEEP prompts to one model, in arrival order (to forget the oldest) and
    sorted (the longest prefix `prompt` shares with any of them is shared with one of its two
    neighbours in sorted order, so a read compares two prompts, not all of them: with every
    prompt compared, the bench's fake provider spent half its CPU here and, on a two-core
    machine, took a core from the service it measured)."""

    def __init__(self) -> None:
        self.order: deque[str] = deque()
        self.sorted: list[str] = []

    def longest_shared(self, prompt: str) -> int:
        at = bisect.bisect_left(self.sorted, prompt)
        neighbours = self.sorted[max(at - 1, 0):at + 1]
        return max((_common_prefix(prompt, other) for other in neighbours), default=0)

    def add(self, prompt: str) -> None:
        if len(self.order) == CACHE_KEEP:
            oldest = self.order.popleft()
            del self.sorted[bisect.bisect_left(self.sorted, oldest)]
        self.order.append(prompt)
        bisect.insort(self.sorted, prompt)


class PromptCache:
    """The provider's prompt cache: the prompts each model has seen, and how much of a new one
    they already hold."""

    def __init__(self, *, minimum: int, unit: int) -> None:
        self.minimum = minimum
        self.unit = unit
        self._seen: dict[str, _Seen] = defaultdict(_Seen)

    def read(self, model: str, prompt: str, total_tokens: int) -> int:
        """Cached tokens for `prompt` (then remembered): the longest prefix shared with an
        earlier prompt to `model`, rounded down to the cache's grain, 0 under its minimum."""
        seen = self._seen[model]
        shared = seen.longest_shared(prompt)
        seen.add(prompt)
        tokens = min(shared // CHARS_PER_TOKEN, total_tokens)
        if tokens < self.minimum:
            return 0
        return self.minimum + (tokens - self.minimum) // self.unit * self.unit


@dataclass(frozen=True, slots=True)
class TokenCount:
    """One reply's usage; `cached` is part of `prompt`, `reasoning` part of `completion`."""

    prompt: int
    completion: int
    cached: int = 0
    reasoning: int = 0

    def recorded(self) -> dict[str, int]:
        """Flat, as `RecordedRequest.usage` keeps it (`Usage(**usage)` reads it)."""
        return {
            "prompt_tokens": self.prompt,
            "completion_tokens": self.completion,
            "total_tokens": self.prompt + self.completion,
            "cached_tokens": self.cached,
            "reasoning_tokens": self.reasoning,
        }

    def wire(self, *, detailed: bool, provider: str) -> Body:
        """The `usage` object of the reply: the minimal fake's three numbers, or the provider's
        full shape."""
        usage: Body = {
            "prompt_tokens": self.prompt,
            "completion_tokens": self.completion,
            "total_tokens": self.prompt + self.completion,
        }
        if not detailed:
            return usage
        usage["prompt_tokens_details"] = {"cached_tokens": self.cached, "audio_tokens": 0}
        usage["completion_tokens_details"] = {
            "reasoning_tokens": self.reasoning,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        }
        if provider == "deepseek":
            usage["prompt_cache_hit_tokens"] = self.cached
            usage["prompt_cache_miss_tokens"] = self.prompt - self.cached
        return usage


def bill_usd(usages: list[dict[str, int]], *, input: float, output: float,
             cached_input: float | None = None) -> float:
    """What `usages` cost at per-million-token rates; cached prompt tokens at `cached_input`
    (at `input` when None), reasoning tokens as output (they are inside completion_tokens)."""
    cached_rate = input if cached_input is None else cached_input
    total = 0.0
    for usage in usages:
        cached = usage.get("cached_tokens", 0)
        total += (usage["prompt_tokens"] - cached) * input + cached * cached_rate
        total += usage["completion_tokens"] * output
    return total / 1_000_000
