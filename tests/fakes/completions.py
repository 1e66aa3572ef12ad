"""The `chat.completion` object the fake answers with, and an output cap's cut: what a provider
sends back once it has decided what the model says."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass

from aiohttp import web

from tests.fakes.chat_requests import Body
from tests.fakes.token_usage import CHARS_PER_TOKEN, estimate_tokens

FINGERPRINT = "fp_f4k3d1a1ec"


@dataclass(frozen=True, slots=True)
class Output:
    """What the model produced: visible content (None when it refused or was filtered), hidden
    reasoning tokens, and why it stopped."""

    content: str | None
    reasoning: int
    visible: int
    finish_reason: str

    @classmethod
    def of(cls, content: str | None, *, reasoning: int, finish_reason: str,
           refusal: str | None = None) -> Output:
        visible = estimate_tokens(content or refusal or "")
        return cls(content, reasoning, visible, finish_reason)

    def capped(self, cap: int | None) -> Output:
        """Cut off at the output cap: reasoning first, then the content mid-way (mid-string for
        JSON), `finish_reason` "length"; all of it reasoning when the thinking ate the cap."""
        if cap is None or self.content is None or self.reasoning + self.visible <= cap:
            return self
        reasoning = min(self.reasoning, cap)
        content = self.content[: (cap - reasoning) * CHARS_PER_TOKEN]
        return Output(content, reasoning, cap - reasoning, "length")

    @property
    def completion_tokens(self) -> int:
        return self.reasoning + self.visible


def completion_body(*, number: int, model: str, output: Output, refusal: str | None,
                    usage: Body, detailed: bool) -> Body:
    """The reply's JSON; `detailed` adds the fields the real API also sends (annotations, service
    tier, system fingerprint), which the minimal fake never did."""
    message: Body = {"role": "assistant", "content": output.content, "refusal": refusal}
    if detailed:
        message["annotations"] = []
    reply: Body = {
        "id": f"chatcmpl-fake-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": output.finish_reason,
             "logprobs": None}
        ],
        "usage": usage,
    }
    if detailed:
        reply["service_tier"] = "default"
        reply["system_fingerprint"] = FINGERPRINT
    return reply


def error_response(
    status: int,
    message: str | None = None,
    code: str | None = None,
    *,
    body: Body | None = None,
    headers: dict[str, str] | None = None,
) -> web.Response:
    payload = body or {
        "error": {
            "message": message or f"fake error {status}",
            "type": "fake_error",
            "param": None,
            "code": code or str(status),
        }
    }
    return web.json_response(payload, status=status, headers=headers)


def reset(request: web.Request) -> web.StreamResponse:
    """Drop the connection with no response at all (the client sees a reset/disconnect)."""
    transport = request.transport
    if transport is not None:
        transport.abort()
    raise web.HTTPServiceUnavailable  # never reaches the client: the transport is gone


async def stalled(request: web.Request, response: web.Response, seconds: float,
                  closing: asyncio.Event) -> web.StreamResponse:
    """`response` sent as a provider whose body stalls: its status, headers and the first half
    of its body at once, then nothing for `seconds` (or until the server stops), then the rest
    (the usage at its end) if the client is still reading."""
    payload = response.body if isinstance(response.body, bytes) else b""
    stream = web.StreamResponse(status=response.status, headers={
        "Content-Type": "application/json", "Content-Length": str(len(payload))})
    await stream.prepare(request)
    half = len(payload) // 2
    await stream.write(payload[:half])
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(closing.wait(), seconds)
    transport = request.transport
    if transport is not None and not transport.is_closing():
        with contextlib.suppress(ConnectionError):
            await stream.write(payload[half:])
            await stream.write_eof()
    return stream
