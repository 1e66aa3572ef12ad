"""A fake model that knows each question's answer with probability p, for `dialectic eval`.

    knowing = Knowing({"What is 2+2?": "4"}, p=0.7, wrong="scatter", seed=3)
    knowing.install(fake)          # a script on the FakeOpenAI server, for every matching request

A request whose prompt carries one of the questions (read as a model reads it: spotlight markers
gone, datamarks as spaces) and asks for a reply with an answer-bearing field (`answer`, or a
red team synthesizer's `decision`) gets a realistic reply from its schema, that field set to the
right answer with probability p. Otherwise it is wrong: `scatter` picks a different wrong value
each time (numbers off by 1-60, another choice; wrong answers rarely agree, so a majority vote
helps), `concentrate` always the same wrong value (a vote cannot outvote it). The draws are
seeded by the question, the prompt (its random boundaries masked) and how often the same prompt
was asked before, so K identical samples are K independent draws and a rerun draws the same.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from typing import Any, Literal

from tests.fakes.chat_requests import Body, last_text
from tests.fakes.obedience import markers_from_rule, mask_boundaries, readable
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.realistic import LEVELS, RealisticFaker
from tests.fakes.schema_faker import request_schema

Wrong = Literal["scatter", "concentrate"]
ANSWER_FIELDS = ("answer", "decision")


class Knowing:
    def __init__(self, answers: Mapping[str, str], *, p: float, wrong: Wrong = "scatter",
                 seed: int = 0, choices: Mapping[str, tuple[str, ...]] | None = None) -> None:
        if not 0 <= p <= 1:
            raise ValueError(f"p must be between 0 and 1, not {p}")
        self.answers = dict(answers)
        self.choices = dict(choices or {})
        self.p = p
        self.wrong = wrong
        self.seed = seed
        self.asked: Counter[str] = Counter()   # raw prompt -> times asked
        self.right = 0
        self.wrong_given = 0

    def install(self, fake: FakeOpenAI) -> None:
        fake.script(self.matches, self.reply, times=None)

    def _read(self, body: Body) -> tuple[str, str, str]:
        system, user = last_text(body, "system"), last_text(body, "user")
        markers = markers_from_rule(system)
        return system, user, readable(user, markers)

    def question_in(self, body: Body) -> str | None:
        _, _, text = self._read(body)
        return next((q for q in self.answers if q in text), None)

    def matches(self, body: Body) -> bool:
        schema = request_schema(body) or {}
        fields = schema.get("properties") or {}
        return any(f in fields for f in ANSWER_FIELDS) and self.question_in(body) is not None

    def reply(self, body: Body) -> dict[str, Any]:
        question = self.question_in(body)
        assert question is not None
        system, user, text = self._read(body)
        masked = mask_boundaries(f"{system}\x00{user}", markers_from_rule(system))
        occurrence = self.asked[system + user]
        self.asked[system + user] += 1
        rng = random.Random(f"{self.seed}\x00{masked}\x00{occurrence}")
        schema = request_schema(body) or {}
        value: dict[str, Any] = RealisticFaker(schema, prompt=text, level=LEVELS["short"],
                                               rng=rng).make()
        answer = self.answer(question, rng)
        for name in ANSWER_FIELDS:
            if name in value:
                value[name] = answer
        return value

    def answer(self, question: str, rng: random.Random) -> str:
        """The right answer with probability p, else a wrong one as `wrong` says."""
        right = self.answers[question]
        if rng.random() < self.p:
            self.right += 1
            return right
        self.wrong_given += 1
        return self._wrong(question, right, rng)

    def _wrong(self, question: str, right: str, rng: random.Random) -> str:
        choices = self.choices.get(question)
        if choices:
            others = [c for c in choices if c != right]
            return others[0] if self.wrong == "concentrate" else rng.choice(others)
        if right.casefold() in ("yes", "no"):
            return "no" if right.casefold() == "yes" else "yes"
        try:
            number = int(right)
        except ValueError:
            return f"not {right}" if self.wrong == "concentrate" else \
                f"{right} or so, case {rng.randint(1, 10**6)}"
        if self.wrong == "concentrate":
            return str(number + 1)
        return str(number + rng.choice([-1, 1]) * rng.randint(1, 60))
