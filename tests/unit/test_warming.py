"""A debate's warm-up (the statistics' imports, numpy above all, and each model's price: engine/
core/debate.py `_warm`) starts at the debate's first provider call, not with the debate: its thread
holds the GIL while it imports, and started earlier it slowed the preparing of the first round's
calls (docs/benchmarks.md, round four)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import SecretStr

from engine.core import debate as debate_module
from engine.core.debate import prepare, run_debate
from engine.domain import DebateRequest
from engine.ports import MemoryCheckpointStore, MemoryEventSink
from engine.provider.llm import CallSpec, Reply, T
from engine.provider.rehearsal import RehearsalModel
from engine.settings import EngineSettings

SETTINGS = EngineSettings(openai_api_key=SecretStr("x"), openai_base_url="http://127.0.0.1:9")


class Client:
    """Rehearsal replies; tells each model's window after a pause (the time a warm-up started
    with the debate would have had to run), and notes how many warm-ups had run at its first
    call."""

    def __init__(self, warmed: list[object]) -> None:
        self.base = RehearsalModel()
        self.warmed = warmed
        self.at_first_call: int | None = None
        self.calls = 0

    @property
    def rehearsal(self) -> bool:
        return False

    async def window(self, model: str) -> int | None:
        await asyncio.sleep(0.05)
        return None

    async def complete(self, spec: CallSpec[T]) -> Reply[T]:
        if self.at_first_call is None:
            self.at_first_call = len(self.warmed)
        self.calls += 1
        return await self.base.complete(spec)

    async def aclose(self) -> None:
        return None


async def _run(mode: str, monkeypatch: pytest.MonkeyPatch, store: MemoryCheckpointStore
               ) -> tuple[Client, list[object], Any]:
    warmed: list[object] = []
    monkeypatch.setattr(debate_module, "_warm", lambda *args, **kwargs: warmed.append(args))
    client = Client(warmed)
    prepared = prepare(SETTINGS, DebateRequest(topic="Should we cache the catalogue?",
                                               mode=mode))
    result = await run_debate(prepared, debate_id="d-1", settings=SETTINGS, llm=client,
                              store=store, sink=MemoryEventSink())
    return client, warmed, result


@pytest.mark.parametrize("mode", ["consensus", "simple"])
async def test_the_warm_up_starts_at_the_first_provider_call(
        mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    client, warmed, result = await _run(mode, monkeypatch, MemoryCheckpointStore())
    assert result.status == "completed" and client.calls > 0
    assert client.at_first_call == 0   # nothing warmed before the debate called the provider
    assert len(warmed) == 1            # and warmed once, while it ran


async def test_a_debate_read_back_whole_warms_nothing_and_still_computes_its_statistics(
        monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryCheckpointStore()
    await _run("consensus", monkeypatch, store)
    client, warmed, result = await _run("consensus", monkeypatch, store)   # every step stored
    assert client.calls == 0 and warmed == []
    assert result.status == "completed" and result.consensus.alpha is not None
