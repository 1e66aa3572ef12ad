"""What recent debates teach the service: how their token use compared with the plans' guesses
(estimates scale by it) and each judge's scoring habit (calibration reads each judge against it).
Both are read from the finished debates, at most once a minute per process."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime

from engine.debate import prepare
from engine.errors import InvalidRequest
from engine.settings import EngineSettings
from engine.vocabulary import ResultStatus
from storage import debates
from storage.db import Database

TTL_SECONDS = 60.0


class Calibration:
    def __init__(self, engine: EngineSettings, db: Database, *,
                 clock: Callable[[], datetime]) -> None:
        self.engine = engine
        self.db = db
        self.clock = clock
        self._scales: dict[str, tuple[datetime, dict[str, float]]] = {}
        self._judges: tuple[datetime, dict[str, list[float]]] | None = None
        self._locks: dict[str, asyncio.Lock] = {}

    def forget(self) -> None:
        """Read everything again on next use (tests; after an operator changes history)."""
        self._scales.clear()
        self._judges = None

    async def token_scale(self, mode: str) -> dict[str, float]:
        """How recent debates of this mode compared with their plans' token guesses: the
        ratio of reported to planned tokens over the last finished ones (1.0 when unknown),
        clamped to [0.25, 4] so one odd debate cannot swing an estimate wildly."""
        lock = self._locks.setdefault(f"scale:{mode}", asyncio.Lock())
        async with lock:  # concurrent submissions wait for one computation, not 100 of them
            cached = self._scales.get(mode)
            now = self.clock()
            if cached is not None and (now - cached[0]).total_seconds() < TTL_SECONDS:
                return cached[1]
            scale = await self._measure_scale(mode)
            self._scales[mode] = (now, scale)
            return scale

    async def _measure_scale(self, mode: str) -> dict[str, float]:
        async with self.db.transaction(readonly=True) as session:
            recent = await debates.list_recent(session, limit=200)
        planned = actual = 0
        for record in recent:
            result = record.result
            if record.mode != mode or result is None or result.status != ResultStatus.COMPLETED:
                continue
            if result.cost.reused_calls or result.rehearsal != self.engine.is_rehearsal:
                continue  # resumed or replayed: its token count is not one whole run
            try:
                plan = prepare(self.engine, record.request).plan
            except InvalidRequest:
                continue  # its preset or model is no longer configured

            planned += sum(c.prompt_tokens + c.completion_tokens for c in plan.calls)
            actual += result.cost.prompt_tokens + result.cost.completion_tokens
            if planned > 200_000:
                break
        ratio = min(max(actual / planned, 0.25), 4.0) if planned and actual else 1.0
        return {"*": ratio}

    async def judge_scores(self, debates_back: int = 50) -> dict[str, list[float]]:
        """Each judge's raw scores over recent debates, for calibration (a judge who always
        scores high is read against its own habit, shrunk toward the panel while it is short).
        Computed at most once a minute per process."""
        async with self._locks.setdefault("judge_history", asyncio.Lock()):
            now = self.clock()
            if self._judges is not None and (
                    now - self._judges[0]).total_seconds() < TTL_SECONDS:
                return self._judges[1]
            history = await self._read_judge_scores(debates_back)
            self._judges = (now, history)
            return history

    async def _read_judge_scores(self, debates_back: int) -> dict[str, list[float]]:
        async with self.db.transaction(readonly=True) as session:
            recent = await debates.list_recent(session, limit=debates_back)
        history: dict[str, list[float]] = {}
        for record in recent:
            result = record.result
            if result is None or result.consensus is None or result.rehearsal:
                continue
            for judge, row in result.consensus.ratings.items():
                history.setdefault(judge, []).extend(v for v in row if v is not None)
        return history
