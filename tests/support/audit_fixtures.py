"""Synthetic judged histories with known judge biases, for the judge audit and weight tests.

Every debate has a true merit (pro minus con, in rubric points) that is partly explained by
length, as in real debates where the fuller argument is often the better one; judges see the
sides in the order ``engine.judging.judge_order`` gives them. A judge's habit is one of:
fair, "first" (always names Position A and scores it up), "verbose" (rewards length beyond its
merit), "harsh" (scores everything lower), "late-harsh" (turns harsh in the last debates).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from engine.oversight.panel_records import JudgeVerdict, PanelRecord, ReviewLabel, Side, Winner

# engine.judging cannot be imported first (judging -> protocols -> consensus -> judging);
# loading the protocols package first settles the cycle.
from engine.protocols.judging import judge_order

Habit = Literal["fair", "first", "verbose", "harsh", "late-harsh"]
START = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class SyntheticJudge:
    name: str
    habit: Habit = "fair"
    model: str = "gpt-4o-mini"
    accuracy_noise: float = 0.35  # sd of the noise on each side's score


def _winner(pro: float, con: float) -> Winner:
    diff = pro - con
    return "pro" if diff > 0.25 else "con" if diff < -0.25 else "tie"


def _verdict(judge: SyntheticJudge, index: int, debate_id: str, merit: float, level: float,
             log_ratio: float, late: bool, rng: random.Random) -> JudgeVerdict:
    first: Side = "pro" if judge_order(debate_id, index)[0] == "pro" else "con"
    pro = level + merit / 2 + rng.gauss(0, judge.accuracy_noise)
    con = level - merit / 2 + rng.gauss(0, judge.accuracy_noise)
    if judge.habit == "verbose":
        pro, con = pro + 0.8 * log_ratio, con - 0.8 * log_ratio
    if judge.habit == "harsh" or (judge.habit == "late-harsh" and late):
        pro, con = pro - 1.5, con - 1.5
    winner = _winner(pro, con)
    if judge.habit == "first":
        shift = 0.9 if first == "pro" else -0.9
        pro, con = pro + shift, con - shift
        winner = first
    return JudgeVerdict(judge=judge.name, model=judge.model, shown_first=first, winner=winner,
                        scores={"pro": pro, "con": con})


def _panel_winner(verdicts: list[JudgeVerdict]) -> Winner:
    mean = sum(v.scores["pro"] - v.scores["con"] for v in verdicts) / len(verdicts)
    return "pro" if mean > 0.25 else "con" if mean < -0.25 else "tie"


def history(judges: list[SyntheticJudge], *, debates: int = 240, seed: int = 7,
            reviewed: float = 0.5, late: int = 30) -> list[PanelRecord]:
    """``debates`` judged debates, a ``reviewed`` share of them labelled by a reviewer who
    approves when the panel named the truly stronger side and escalates otherwise."""
    rng = random.Random(seed)
    records = []
    for d in range(debates):
        debate_id = f"deb-{seed}-{d:04d}"
        log_ratio = rng.gauss(0, 0.6)
        merit = 0.8 * log_ratio + rng.gauss(0, 1.0)
        level = rng.gauss(6.5, 0.7)
        verdicts = [_verdict(j, i, debate_id, merit, level, log_ratio, d >= debates - late, rng)
                    for i, j in enumerate(judges)]
        winner = _panel_winner(verdicts)
        truth: Side = "pro" if merit > 0 else "con"
        review: ReviewLabel | None = None
        if rng.random() < reviewed:
            review = "approved" if winner == truth else "escalated"
        records.append(PanelRecord(
            debate_id=debate_id, finished_at=START + timedelta(hours=d),
            lengths={"pro": round(3000 * 2 ** (log_ratio / 2)),
                     "con": round(3000 * 2 ** (-log_ratio / 2))},
            verdicts=tuple(verdicts), panel_winner=winner, review=review, preset="decision"))
    return records
