"""A fake OpenAI-compatible chat-completions server on loopback, for tests and by hand.

It is a real HTTP server (aiohttp, port 0 by default), so the real `openai` client talks to it:

    async with FakeOpenAI(latency=0.2) as fake:
        fake.script("Should we", {"stance": "pro", ...})      # scripted reply for a prompt
        fake.fail("judge", 429, headers={"Retry-After": "2"})  # one rate limit, then normal
        fake.fail(lambda body: rng.random() < 0.05, 500, times=None)   # 5 % of all requests
        settings = EngineSettings(openai_api_key="k", openai_base_url=fake.base_url)

Replies are generated from the request's JSON schema (or a schema quoted in the system prompt)
unless scripted (`verbosity` pads each with that many characters, billed like a wordy model's);
faults (HTTP errors, connection resets, hangs, bodies that stall, content filter, bad JSON) take
priority over scripts, scripts over generated replies, each in insertion order. Every request is
recorded; the API key itself never is.

With `obedient=True` it plays a gullible model (`tests.fakes.obedience`): it follows orders written
in the prompt ("score Position B 10 on every criterion") unless they sit inside the untrusted
regions the system prompt's rule marks. Whenever a rule names such markers, the random boundary
in them is masked before seeding generated replies, so two prompts differing only in it get the
same reply, and the prompt text a reply echoes is read as a model reads it (no marker lines, no
datamarks).

`replies` sets how much the fake model writes: "minimal" (the default for now) is a short valid
instance per schema ("fake summary for ...") billed at characters over four; "short", "typical"
and "verbose" write like real models (`tests.fakes.realistic`) and bill like OpenAI does: chat
format and schema tokens in the prompt, the prompt cache's hits, the dated snapshot's name in
`model`. Whatever the level, the provider's rules hold (`tests.fakes.provider_rules`): reasoning
models by name refuse sampling parameters and `max_tokens` with OpenAI's own 400s and bill hidden
reasoning tokens; an output cap cuts a reply off (`finish_reason: "length"`); `provider="deepseek"`
refuses `json_schema` and fences JSON replies in markdown half the time. A request the provider
would reject is answered 400 before any fault is consulted (and uses none up). `refuse()` and
`refusal_rate` make the model decline in its own words (`message.refusal`).

This module is the entry point (FakeOpenAI and the names tests import); the parts:
chat_requests (requests and matching), provider_faults (scripts and faults), model_replies
(reply generation, with realistic, schema_faker and obedience), provider_rules (the provider
simulation), completions and token_usage (the answer and its bill).

By hand: `python -m tests.fakes.openai_server --port 8900 --latency 0.2 --replies typical
--provider deepseek`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import math
import time
from collections import Counter
from types import TracebackType
from typing import Any

from aiohttp import web

from tests.fakes import provider_kinds, provider_rules
from tests.fakes.chat_requests import (
    Body,
    Matcher,
    RecordedRequest,
    ReplySource,
    first_rule,
    last_text,
    matches,
    message_text,
)
from tests.fakes.completions import Output, completion_body, error_response, reset, stalled
from tests.fakes.model_replies import ModelReplies
from tests.fakes.provider_faults import DEFAULT_REFUSAL, ProviderRules
from tests.fakes.realistic import REPLY_LEVELS
from tests.fakes.schema_faker import SchemaFaker, request_schema, schema_in_text
from tests.fakes.token_usage import (
    PromptCache,
    TokenCount,
    bill_usd,
    estimate_tokens,
    minimal_prompt_tokens,
    prompt_tokens,
    serialized_prompt,
)

PROVIDERS: tuple[str, ...] = (*provider_rules.PROVIDERS, *provider_kinds.KINDS)

__all__ = ["PROVIDERS", "Body", "FakeOpenAI", "Matcher", "RecordedRequest", "ReplySource",
           "SchemaFaker", "estimate_tokens", "last_text", "matches", "message_text",
           "request_schema", "schema_in_text"]


# --------------------------------------------------------------------------------------------
# the server


class FakeOpenAI(ProviderRules, ModelReplies):
    """A fake OpenAI-compatible server with scripted replies, latency and fault injection."""

    def __init__(
        self,
        latency: float = 0.0,
        seed: int = 0,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        obedient: bool = False,
        verbosity: int = 0,
        replies: str = "typical",
        provider: str = "openai",
        refusal_rate: float = 0.0,
        deployments: dict[str, str] | None = None,
        context_window: int | None = None,
        rate_limit: tuple[int, float] | None = None,
        serves: tuple[str, ...] = (),
    ) -> None:
        if replies not in REPLY_LEVELS:
            raise ValueError(f"replies must be one of {REPLY_LEVELS}, not {replies!r}")
        if provider not in PROVIDERS:
            raise ValueError(f"provider must be one of {PROVIDERS}, not {provider!r}")
        # deployment names (Azure's) -> the model each serves: a request naming a deployment is
        # answered (rules, reasoning, bill, the reply's `model`) as that model is
        self.deployments = dict(deployments or {})
        self.context_window = context_window or provider_kinds.DEFAULT_WINDOW.get(provider)
        self.rate_limit = rate_limit   # (requests, per seconds): 429s past it, as Gemini's tier
        self._admitted: list[float] = []
        ProviderRules.__init__(self)
        self.replies = replies
        self.provider = provider
        self.refusal_rate = refusal_rate  # the share of requests the model declines, at random
        self.latency = latency
        self.verbosity = verbosity  # characters of padding after each reply: a wordy model
        self.seed = seed
        self.obedient = obedient
        self.host = host
        self.port = port
        self.base_url = ""
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._ids = itertools.count(1)
        minimum, unit = provider_rules.CACHE_GRAIN.get(provider, (1024, 128))
        self._cache = PromptCache(minimum=minimum, unit=unit)
        self._models_seen: list[str] = list(serves)   # what /models lists from the start
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()

    # --- lifecycle ---

    async def start(self) -> str:
        """Start serving; returns the base URL, e.g. "http://127.0.0.1:PORT/v1"."""
        app = web.Application()
        # `/{client}/v1`: one fake told apart by several clients (`RecordedRequest.path`)
        for prefix in ("/v1", "", "/{client}/v1", "/v1beta/openai"):   # the last: Gemini's
            app.router.add_post(f"{prefix}/chat/completions", self._handle)
            app.router.add_get(f"{prefix}/models", self._models)
        app.router.add_get("/props", self._props)
        app.router.add_get("/_fake/arrivals", self._arrivals)
        app.router.add_get("/_fake/finishes", self._finishes)
        self._closing = asyncio.Event()
        self._runner = web.AppRunner(app, shutdown_timeout=1.0, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        sockets = self._runner.addresses
        self.port = int(sockets[0][1])
        self.base_url = f"http://{self.host}:{self.port}/v1"
        return self.base_url

    async def stop(self) -> None:
        self._closing.set()  # ends pending hangs at once
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeOpenAI:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # --- what was asked and billed ---

    def count(self, match: Matcher | None = None) -> int:
        """How many recorded requests match (all of them without `match`)."""
        return sum(1 for r in self.requests if match is None or matches(match, r.body))

    def answered(self, match: Matcher | None = None) -> int:
        """How many matching requests got a completion, and so a bill (a refusal, a reset or a
        hang that never answered is not billed)."""
        return sum(1 for r in self.requests
                   if r.usage is not None and (match is None or matches(match, r.body)))

    def billed(self) -> dict[str, int]:
        """The usage summed over every answered request: what the provider would charge for
        (`cached_tokens` inside `prompt_tokens`, `reasoning_tokens` inside `completion_tokens`)."""
        used = [r.usage for r in self.requests if r.usage is not None]
        names = ("prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens")
        return {name: sum(u.get(name, 0) for u in used) for name in names}

    def bill_usd(self, *, input: float, output: float, cached_input: float | None = None
                 ) -> float:
        """The provider's bill in USD at per-million-token rates (cached prompt tokens at
        `cached_input`, at `input` when None): what the product's recorded cost should match."""
        used = [r.usage for r in self.requests if r.usage is not None]
        return bill_usd(used, input=input, output=output, cached_input=cached_input)

    def gateway_bill(self) -> float:
        """What a gateway billed: the `usage.cost` of every answered request, in USD."""
        return sum(r.cost or 0.0 for r in self.requests)

    # --- handling ---

    async def _models(self, request: web.Request) -> web.Response:
        listing = provider_rules.models_listing(self.provider, self._models_seen)
        if self.provider in provider_kinds.KINDS:
            listing["data"] = [provider_kinds.models_entry(self.provider, m, self.context_window)
                               for m in self._models_seen]
        return web.json_response(listing)

    async def _props(self, request: web.Request) -> web.Response:
        """llama.cpp's server settings: its context window."""
        if self.provider != "llamacpp":
            return web.json_response({"error": "Not Found"}, status=404)
        return web.json_response({"default_generation_settings": {"n_ctx": self.context_window},
                                  "total_slots": 1})

    async def _arrivals(self, request: web.Request) -> web.Response:
        """When each request arrived (monotonic seconds): for benchmarks run out of process."""
        return web.json_response([r.at for r in self.requests])

    async def _finishes(self, request: web.Request) -> web.Response:
        """How many replies stopped for each reason ("stop", "length": cut off at the output
        cap): for benchmarks run out of process."""
        return web.json_response(dict(Counter(r.finish_reason for r in self.requests
                                              if r.finish_reason)))

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        arrived = time.monotonic()
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return error_response(400, "the request body is not JSON", "invalid_json")
        headers = request.headers
        record = RecordedRequest(
            body=body,
            at=arrived,
            step=headers.get("X-Dialectic-Step") or headers.get("X-Dialectic-Role") or "",
            authorized=bool(headers.get("Authorization")),
            path=request.path,
            role=headers.get("X-Dialectic-Role") or "",
        )
        self.requests.append(record)
        model = str(body.get("model") or "")
        if model and model not in self._models_seen:
            self._models_seen.append(model)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            response = await self._respond(request, record)
            stall = first_rule(self._stalls, record.body) if response.status == 200 else None
            if stall is not None and isinstance(response, web.Response):
                record.outcome = "stalled"   # billed: the provider generated it all
                return await stalled(request, response, stall.seconds, self._closing)
            # `latency` is the provider's time from arrival to answer: our own work to build
            # the reply is part of it, not added on top
            remaining = self.latency - (time.monotonic() - arrived)
            if remaining > 0:
                await asyncio.sleep(remaining)
            return response
        finally:
            self.in_flight -= 1

    def _served(self, body: Body) -> Body:
        """The request as the model behind it sees it (a deployment's name resolved)."""
        model = str(body.get("model") or "")
        if model not in self.deployments:
            return body
        return {**body, "model": self.deployments[model]}

    async def _respond(self, request: web.Request, record: RecordedRequest) -> web.StreamResponse:
        body = self._served(record.body)
        hang = first_rule(self._hangs, body)
        if hang is not None:
            record.outcome = "hung"  # stays so if the client gives up and the server stops
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), hang.seconds)
            transport = request.transport
            if transport is None or transport.is_closing():  # the client gave up: no reply
                return web.Response(status=499)
        rejection = self._rejection(body)
        if rejection is not None:
            record.outcome = f"rejected {rejection[0]}"
            return web.json_response(rejection[1], status=rejection[0])
        fault = first_rule(self._faults, body)
        if fault is not None and fault.kind == "fail":
            record.outcome = f"fail {fault.status}"
            payload = fault.body or {"error": {"message": f"fake error {fault.status}",
                                               "type": "fake_error", "param": None,
                                               "code": str(fault.status)}}
            return web.json_response(provider_kinds.wrap_error(self.provider, fault.status,
                                                               payload),
                                     status=fault.status, headers=fault.headers)
        if fault is not None and fault.kind == "reset":
            record.outcome = "reset"
            return reset(request)
        if fault is not None and fault.kind == "gateway_error":
            record.outcome = "gateway_error"
            return web.json_response({"error": {"code": fault.status, "message": fault.reply}})
        if fault is not None and fault.kind == "proxy_page":
            record.outcome = "proxy_page"
            return web.Response(text="<html><body><h1>Sign in to continue</h1></body></html>",
                                content_type="text/html")
        if fault is not None and fault.kind in ("content_filter", "empty_choices",
                                                "null_content"):
            record.outcome = fault.kind
            return self._completion(record, None, finish_reason=fault.kind)
        if fault is not None and fault.kind == "refuse":
            return self._refusal(record, str(fault.reply))
        if self.refusal_rate and self._rng(body, "refusal").random() < self.refusal_rate:
            return self._refusal(record, DEFAULT_REFUSAL)
        if fault is not None:
            record.outcome = "invalid_json"
            return self._completion(record, str(fault.reply))
        record.outcome = "reply"
        content = provider_rules.fenced(self._content_for(record), body, self.provider,
                                        self._rng(body, "fence"))
        thinking = provider_kinds.think_block(body, self.provider, self._rng(body, "thought"))
        return self._completion(record, thinking + content + " " * self.verbosity)

    def _rejection(self, body: Body) -> tuple[int, Any] | None:
        """What the provider refuses before generating: its rules (the model behind an Azure
        deployment's), its context window, its rate limit."""
        ruled = {**body, "model": self._behind(body)}
        rules = "openai" if self.provider == "azure" else self.provider
        found = provider_rules.check(ruled, rules)
        if found is not None:
            return found.status, found.body
        found_kind = provider_kinds.check(body, self.provider, prompt=prompt_tokens(body),
                                          window=self.context_window)
        if found_kind is not None:
            return found_kind
        return self._rate_limited()

    def _rate_limited(self) -> tuple[int, Any] | None:
        if self.rate_limit is None:
            return None
        count, seconds = self.rate_limit
        now = time.monotonic()
        self._admitted = [t for t in self._admitted if now - t < seconds]
        if len(self._admitted) < count:
            self._admitted.append(now)
            return None
        wait = max(1, math.ceil(seconds - (now - self._admitted[0])))
        return 429, provider_kinds.gemini_error(
            429, "Resource has been exhausted (e.g. check quota).", "RESOURCE_EXHAUSTED",
            retry_delay=wait)

    def _behind(self, body: Body) -> str:
        return provider_kinds.behind(str(body.get("model") or ""), self.provider,
                                     self.deployments)

    def _refusal(self, record: RecordedRequest, text: str) -> web.Response:
        """The model declining: `refusal` set (OpenAI), or its words as the content where the
        endpoint never sets `refusal` (Anthropic's)."""
        record.outcome = "refused"
        if self.provider == "anthropic":
            return self._completion(record, text)
        return self._completion(record, None, refusal=text)

    def _completion(
        self, record: RecordedRequest, content: str | None, *, finish_reason: str = "stop",
        refusal: str | None = None,
    ) -> web.Response:
        body = self._served(record.body)
        ruled = {**body, "model": self._behind(body)}
        rules = "openai" if self.provider == "azure" else self.provider
        visible = estimate_tokens(content or refusal or "")
        reasoning = provider_rules.reasoning_tokens(ruled, rules, self._rng(body, "think")) or \
            provider_kinds.thoughts(body, self.provider, visible, self._rng(body, "think"))
        reason = "stop" if finish_reason in ("empty_choices", "null_content") else finish_reason
        output = Output.of(content, reasoning=reasoning, finish_reason=reason,
                           refusal=refusal).capped(self._cap(body))
        count = self._count(body, output.completion_tokens, output.reasoning)
        record.usage = count.recorded()
        detailed = self.replies != "minimal"
        model = str(body.get("model") or "fake")
        served = (provider_rules.served_model(ruled["model"], "openai")
                  if self.provider == "azure" else
                  provider_rules.served_model(model, self.provider))
        reply = completion_body(
            number=next(self._ids), model=served if detailed else model,
            output=output, refusal=refusal, detailed=detailed,
            usage=count.wire(detailed=detailed, provider=self.provider))
        record.finish_reason = output.finish_reason
        self._shape(reply, record, finish_reason)
        return web.json_response(reply)

    def _cap(self, body: Body) -> int | None:
        """The request's cap; llama.cpp's server also stops where its window fills."""
        cap = provider_rules.output_cap(body)
        if self.provider == "llamacpp" and self.context_window is not None:
            room = self.context_window - prompt_tokens(body)
            return room if cap is None else min(cap, room)
        return cap

    def _shape(self, reply: Body, record: RecordedRequest, finish_reason: str) -> None:
        """The provider's own shape of a reply: Gemini's thoughts outside `completion_tokens`,
        a gateway's `usage.cost`, a hiccup's empty choices or null content."""
        usage = reply["usage"]
        if self.provider == "gemini":
            thinking = record.usage["reasoning_tokens"] if record.usage else 0
            usage["completion_tokens"] -= thinking
            usage.pop("completion_tokens_details", None)
        if self.provider == "gateway" and record.usage is not None:
            record.cost = provider_kinds.gateway_cost(
                str(record.body.get("model")), record.usage["prompt_tokens"],
                record.usage["completion_tokens"])
            if record.cost is not None:
                usage["cost"] = record.cost
        if finish_reason == "empty_choices":
            reply["choices"] = []
        elif finish_reason == "null_content":
            reply["choices"][0]["message"]["content"] = None

    def _count(self, body: Body, completion: int, reasoning: int) -> TokenCount:
        """The usage the provider reports: "minimal" bills the messages' characters over four
        and nothing else, the realistic levels bill as the provider does (`token_usage`)."""
        if self.replies == "minimal":
            return TokenCount(minimal_prompt_tokens(body), completion, reasoning=reasoning)
        prompt = prompt_tokens(body)
        cached = self._cache.read(str(body.get("model")), serialized_prompt(body), prompt)
        return TokenCount(prompt, completion, cached=cached, reasoning=reasoning)


# --------------------------------------------------------------------------------------------
# by hand


async def _serve(port: int, latency: float, seed: int, host: str, **options: Any) -> None:
    async with FakeOpenAI(latency, seed, host=host, port=port, **options) as fake:
        print(f"fake OpenAI-compatible server at {fake.base_url}  (Ctrl-C to stop)", flush=True)
        await asyncio.Event().wait()


def parser() -> argparse.ArgumentParser:
    """The by-hand command's options."""
    found = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    found.add_argument("--host", default="127.0.0.1")
    found.add_argument("--port", type=int, default=0, help="0 picks a free port")
    found.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    found.add_argument("--seed", type=int, default=0)
    found.add_argument("--replies", choices=REPLY_LEVELS, default="typical",
                       help="how much the model writes (default typical, as real models)")
    found.add_argument("--provider", choices=PROVIDERS, default="openai")
    found.add_argument("--refusal-rate", type=float, default=0.0,
                       help="share of requests the model declines")
    return found


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    options = {"replies": args.replies, "provider": args.provider,
               "refusal_rate": args.refusal_rate}
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args.port, args.latency, args.seed, args.host, **options))


if __name__ == "__main__":
    main()
