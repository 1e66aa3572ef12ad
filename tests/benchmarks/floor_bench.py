"""What a call costs before any persistence: the floor under the service's CPU per call.

In one process against the fake provider (its own process, 200 ms a call, `BENCH_REPLIES`
replies), 200 concurrent consensus debates run twice, CPU counted with `time.process_time`:

    engine    the whole engine (prompts, screening, money, the gateway, the SDK) with the
              checkpoints and events in memory: no database, no service
    SDK       the same requests, byte for byte (recorded during the engine run), posted with
              the openai client exactly as the gateway posts them, each reply read into a
              `ChatCompletion` as the gateway reads it (`completion_in`), as many at once: the
              SDK's own cost, which we cannot cut

The service's figure (service_bench.py) minus the engine's is persistence and the service; the
engine's minus the SDK's is the engine's own work."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import httpx2
from openai.types.chat import ChatCompletion

from engine.core.debate import prepare, run_debate
from engine.domain import DebateRequest
from engine.ports import MemoryCheckpointStore, MemoryEventSink
from engine.provider.gateway import OpenAIGateway
from engine.provider.gateway.answers import completion_in
from engine.provider.llm import CallSpec, T
from tests.benchmarks.proxy import fake_provider
from tests.fakes.fixtures import gateway_settings

LATENCY = 0.2
DEBATES = int(os.environ.get("BENCH_FLOOR_DEBATES", "200"))
REPLIES = os.environ.get("BENCH_REPLIES", "typical")


class _Recording(OpenAIGateway):
    """The gateway, keeping each request body it posts."""

    bodies: list[dict[str, Any]]

    async def _post(self, spec: CallSpec[T], body: dict[str, Any]) -> ChatCompletion:
        self.bodies.append(body)
        return await super()._post(spec, body)


async def _engine(gateway: _Recording) -> tuple[int, float]:
    settings = gateway._settings

    async def one(i: int) -> None:
        prepared = prepare(settings, DebateRequest(
            topic=f"Should team {i} adopt microservices from day one?", mode="consensus",
            no_cache=True))
        await run_debate(prepared, debate_id=f"floor-{i}", settings=settings, llm=gateway,
                         store=MemoryCheckpointStore(), sink=MemoryEventSink())

    cpu = time.process_time()
    await asyncio.gather(*(one(i) for i in range(DEBATES)))
    return len(gateway.bodies), time.process_time() - cpu


async def _sdk(gateway: _Recording, bodies: list[dict[str, Any]]) -> float:
    client = gateway._client
    slots = asyncio.Semaphore(DEBATES * 4)   # as many in flight as the debates' widest phase

    async def post(body: dict[str, Any]) -> None:
        async with slots:
            response = await client.post(
                "/chat/completions", cast_to=httpx2.Response, body=body,
                options={"timeout": 60.0, "security": {"bearer_auth": True},
                         "headers": {"X-Dialectic-Role": "pro", "X-Dialectic-Step": "floor"}})
            completion_in(response, endpoint="floor")

    cpu = time.process_time()
    await asyncio.gather(*(post(body) for body in bodies))
    return time.process_time() - cpu


async def run() -> None:
    async with fake_provider(LATENCY, REPLIES) as provider:
        settings = gateway_settings(provider.base_url, call_timeout=60.0)
        gateway = _Recording(settings)
        gateway.bodies = []
        try:
            await _engine(gateway)        # a warm-up: the schemas, the prices, the statistics
            gateway.bodies = []
            calls, engine_cpu = await _engine(gateway)
            sdk_cpu = await _sdk(gateway, list(gateway.bodies))
        finally:
            await gateway.aclose()
    print(f"\nFloor: {DEBATES} consensus debates in one process, fake provider at "
          f"{LATENCY * 1000:.0f} ms, {REPLIES} replies, {calls} calls; CPU per call:")
    print(f"  engine, checkpoints and events in memory  {1000 * engine_cpu / calls:6.2f} ms")
    print(f"  the SDK alone (the same requests)         {1000 * sdk_cpu / calls:6.2f} ms",
          flush=True)
