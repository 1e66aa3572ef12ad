"""Each mode's wall time over (dependent depth x one call's latency) inside one warm process,
through the real openai client against the fake server at 200 ms latency; and the tokens each
debate uses. (Whole `dialectic run` processes, cold, are cli_bench's.)"""

from __future__ import annotations

import time

from engine.core.debate import prepare, run_debate
from engine.domain import DebateRequest
from engine.ports import MemoryCheckpointStore, MemoryEventSink
from engine.protocols import PROTOCOLS
from engine.provider.gateway import OpenAIGateway
from tests.benchmarks.proxy import arrivals, dependent_rounds, fake_server
from tests.fakes.fixtures import gateway_settings

LATENCY = 0.2
TOPIC = "Should a startup adopt microservices from day one?"
OPTIONS: dict[str, dict[str, object]] = {"simple": {"rounds": 1}, "panel": {"rounds": 1},
                                          "critique": {"rounds": 2}}


async def bench_modes(repeats: int = 5) -> list[dict[str, object]]:
    """The fake server runs in its own process (its CPU is a provider's, not ours); the
    dependent rounds are counted from the arrival times it recorded."""
    rows = []
    async with fake_server(LATENCY) as base_url:
        settings = gateway_settings(base_url, call_timeout=30.0)
        for mode in PROTOCOLS:
            rows.append(await _bench_mode(base_url, settings, mode, repeats))
    return rows


async def _bench_mode(base_url: str, settings, mode: str,  # type: ignore[no-untyped-def]
                      repeats: int) -> dict[str, object]:
    extra = OPTIONS.get(mode, {})
    prepared = prepare(settings, DebateRequest(topic=TOPIC, mode=mode, **extra))  # type: ignore[arg-type]
    llm = OpenAIGateway(settings)
    ratios, tokens, calls = [], (0, 0), 0
    try:
        for i in range(repeats + 1):          # the first run warms the connection pool
            first = len(await arrivals(base_url))
            start = time.perf_counter()
            result = await run_debate(prepared, debate_id=f"bench-{mode}-{i}", settings=settings,
                                      llm=llm, store=MemoryCheckpointStore(),
                                      sink=MemoryEventSink())
            wall = time.perf_counter() - start
            depth = dependent_rounds((await arrivals(base_url))[first:], LATENCY)
            if i:
                ratios.append(wall / (depth * LATENCY))
            tokens = (result.cost.prompt_tokens, result.cost.completion_tokens)
            calls = result.cost.calls
    finally:
        await llm.aclose()
    median = sorted(ratios)[len(ratios) // 2]
    return {"mode": mode, "depth": depth, "calls": calls, "ratio_median": median,
            "ratio_max": max(ratios), "prompt_tokens": tokens[0], "completion_tokens": tokens[1],
            "status": result.status}


def print_modes(rows: list[dict[str, object]]) -> None:
    print(f"\nEngine: wall time / (dependent depth x {LATENCY * 1000:.0f} ms latency), "
          "real openai client -> fake server on loopback (target <= 1.05)")
    print(f"{'mode':<11}{'depth':>6}{'calls':>7}{'ratio':>8}{'worst':>8}{'prompt tok':>12}"
          f"{'compl tok':>11}")
    for r in rows:
        print(f"{r['mode']:<11}{r['depth']:>6}{r['calls']:>7}{r['ratio_median']:>8.3f}"
              f"{r['ratio_max']:>8.3f}{r['prompt_tokens']:>12}{r['completion_tokens']:>11}")
