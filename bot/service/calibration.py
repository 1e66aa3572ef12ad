"""What recent debates teach the service: how long their steps' prompts and replies really ran,
per model and step kind (estimates, holds and the run-time gate predict from it,
engine/money/sizing.py), and each judge's scoring habit (calibration reads each judge against it).
Both are read from storage, at most once a minute per process."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from datetime import datetime

from engine.core.debate import prepare
from engine.errors import InvalidRequest
from engine.money.sizing import Observed, SizeBook, Thinking, learned_sizes
from engine.settings import EngineSettings
from storage import debates, steps
from storage.db import Database

TTL_SECONDS = 60.0
PLANS_KEPT = 2_000


class Calibration:
    def __init__(self, engine: EngineSettings, db: Database, *,
                 clock: Callable[[], datetime]) -> None:
        self.engine = engine
        self.db = db
        self.clock = clock
        self._sizes: tuple[datetime, SizeBook] | None = None
        # hidden reasoning per model and effort, learned from every reply this process saw: kept
        # across the books learned each minute, so output caps leave room for it
        self.thinking = Thinking()
        # each debate's planned prompt sizes by step: a stored request plans the same every
        # time, so it is planned once per process (the newest PLANS_KEPT debates are kept)
        self._plans: dict[str, dict[str, int]] = {}
        self._judges: tuple[datetime, dict[str, list[float]]] | None = None
        self._locks: dict[str, asyncio.Lock] = {}

    def forget(self) -> None:
        """Read everything again on next use (tests; after an operator changes history)."""
        self._sizes = None
        self._judges = None

    async def sizes(self) -> SizeBook:
        """Reply and prompt sizes per model and step kind, learned from recent steps (the prior
        where there are too few), computed at most once a minute per process."""
        async with self._locks.setdefault("sizes", asyncio.Lock()):
            now = self.clock()  # concurrent submissions wait for one computation, not 100
            if self._sizes is not None and (now - self._sizes[0]).total_seconds() < TTL_SECONDS:
                return self._sizes[1]
            book = dataclasses.replace(await learned_sizes(self), thinking=self.thinking)
            self._sizes = (now, book)
            return book

    async def recent_usage(self, limit: int) -> Sequence[Observed]:
        """engine.money.sizing.UsageHistory: recent steps' usage, each with its plan's prompt size
        (the debate's request planned again; a debate whose preset or model is gone has none)."""
        async with self.db.transaction(readonly=True) as session:
            seen = await steps.recent_usage(session, limit=limit)
            unplanned = {o.debate_id for o in seen} - self._plans.keys()
            requests = await debates.requests_of(session, unplanned) if unplanned else {}
        for debate_id, request in requests.items():
            try:
                plan = prepare(self.engine, request).plan
            except InvalidRequest:
                self._plans[debate_id] = {}  # its preset or model is gone: no plan to compare
                continue
            self._plans[debate_id] = {c.key: c.prompt_tokens for c in plan.calls}
        while len(self._plans) > PLANS_KEPT:
            del self._plans[next(iter(self._plans))]   # the oldest planned first
        return [dataclasses.replace(o, planned_prompt_tokens=self._plans.get(o.debate_id, {})
                                    .get(o.key)) for o in seen]

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
        async with self.db.transaction(readonly=True) as session:   # not an evaluation's
            recent = await debates.judge_ratings(session, limit=debates_back)   # own books
        history: dict[str, list[float]] = {}
        for ratings in recent:
            for judge, row in ratings.items():
                history.setdefault(judge, []).extend(float(v) for v in row if v is not None)
        return history
