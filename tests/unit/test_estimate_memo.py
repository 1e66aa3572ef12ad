"""The memo of estimates (engine/core/planning.py `estimate_for`): a plan priced again is the
figure computed afresh, in every mode and at every topic size, and it follows whatever the figure
depends on (the settings, the models that answer, the size book, hidden reasoning learned, the
per-debate ceiling, reused steps); the cap refuses a memoised estimate exactly as a fresh one."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import SecretStr

from bot.service.admission import refusal
from engine.core import planning
from engine.core.planning import estimate_for, prepare
from engine.domain import DebateRequest, Estimate
from engine.money.sizing import Size, SizeBook, StepSize
from engine.money.thinking import MIN_REPLIES, Thinking
from engine.settings import EngineSettings, ModelPrice
from engine.vocabulary import Mode

REASONER = "gpt-5-mini"
TOPICS = {"short": "Tabs or spaces?",
          "medium": "Should we move billing to PostgreSQL this quarter? " * 8,
          "long": "Weigh the migration's risks against the licence savings, in detail. " * 40}


def _settings(**overrides: object) -> EngineSettings:
    return EngineSettings(openai_api_key=SecretStr("x"), openai_base_url="http://127.0.0.1:9",
                          default_model=REASONER, **overrides)


def _fresh(settings: EngineSettings, request: DebateRequest, sizes: SizeBook | None = None,
           reused: tuple[str, ...] = (), ceiling: float | None = None) -> Estimate:
    """The figure without the memo."""
    prepared = prepare(settings, request)
    return planning._estimate(settings, prepared.plan,
                              planning.plan_models(settings, request.options, prepared.plan),
                              sizes, frozenset(reused), ceiling)


def _memoised(settings: EngineSettings, request: DebateRequest, sizes: SizeBook | None = None,
              reused: tuple[str, ...] = (), ceiling: float | None = None) -> Estimate:
    """Priced twice: the second answer comes from the memo."""
    first = estimate_for(settings, prepare(settings, request), sizes, reused,
                         max_debate_usd=ceiling)
    again = estimate_for(settings, prepare(settings, request), sizes, reused,
                         max_debate_usd=ceiling)
    assert again is first   # the memo answered
    return again


@pytest.fixture(autouse=True)
def _empty_memo() -> None:
    planning._ESTIMATES.clear()


@pytest.mark.parametrize("topic", list(TOPICS))
@pytest.mark.parametrize("mode", list(Mode))
def test_a_memoised_estimate_is_the_figure_computed_afresh(mode: Mode, topic: str) -> None:
    settings = _settings()
    request = DebateRequest(topic=TOPICS[topic], mode=mode)
    book = SizeBook(thinking=Thinking())
    fresh = _fresh(settings, request, book)
    assert fresh.usd_high > 0
    assert _memoised(settings, request, book) == fresh


def test_topics_of_other_sizes_are_priced_apart() -> None:
    settings = _settings()
    short, long = (DebateRequest(topic=TOPICS[t], mode=Mode.SIMPLE) for t in ("short", "long"))
    assert _memoised(settings, short).usd_high < _memoised(settings, long).usd_high
    assert _memoised(settings, short) == _fresh(settings, short)


def test_other_settings_are_priced_with_their_own_figures() -> None:
    request = DebateRequest(topic=TOPICS["medium"], mode=Mode.STRUCTURED)
    cheap = _settings()
    before = _memoised(cheap, request)
    dear = _settings(prices={REASONER: ModelPrice(input=50.0, output=200.0)})
    after = _memoised(dear, request)
    assert after == _fresh(dear, request)
    assert after.usd_high > 10 * before.usd_high
    other_model = cheap.model_copy(update={"default_model": "gpt-4o"})
    assert _memoised(other_model, request) == _fresh(other_model, request) != before


def test_a_model_learned_to_answer_moves_the_figure() -> None:
    settings = _settings()
    request = DebateRequest(topic=TOPICS["short"], mode=Mode.SIMPLE)
    before = _memoised(settings, request)
    # a deployment name nobody knows answers for the model asked: it is priced as the stand-in
    settings.answers.learn(settings.endpoint_key, REASONER, "an-unknown-deployment")
    after = estimate_for(settings, prepare(settings, request))
    assert after == _fresh(settings, request)
    assert after != before


def test_hidden_reasoning_learned_moves_the_ceiling() -> None:
    thinking = Thinking()
    book = SizeBook(thinking=thinking)
    settings = _settings()
    request = DebateRequest(topic=TOPICS["short"], mode=Mode.SIMPLE)
    before = _memoised(settings, request, book)
    version = thinking.version
    for _ in range(MIN_REPLIES):
        thinking.observe(REASONER, "low", 20_000)   # the roles' effort; far above the prior
    assert thinking.version != version
    after = estimate_for(settings, prepare(settings, request), book)
    assert after == _fresh(settings, request, book)
    assert after.ceiling_usd > before.ceiling_usd


def test_a_reply_that_changes_nothing_keeps_the_version() -> None:
    thinking = Thinking()
    for tokens in (500, 900, 700, 800, 600):
        thinking.observe(REASONER, "low", tokens)
    version = thinking.version
    thinking.observe(REASONER, "low", 100)   # below the most seen: `most` is the same
    assert thinking.version == version
    thinking.observe(REASONER, "low", 1000)
    assert thinking.version == version + 1


def test_a_new_size_book_reuse_and_the_ceiling_are_priced_apart() -> None:
    settings = _settings()
    request = DebateRequest(topic=TOPICS["medium"], mode=Mode.SIMPLE)
    prior = SizeBook(thinking=Thinking())
    before = _memoised(settings, request, prior)
    # the service learns sizes into a new book: replies four times the prior's
    long_replies = StepSize(Size(4000, 1.0), Size(8000, 1.2), samples=50)
    learned = dataclasses.replace(prior, learned={
        (REASONER, kind): long_replies for kind in ("side:opening", "side:rebuttal",
                                                    "judge:verdict")})
    grown = _memoised(settings, request, learned)
    assert grown == _fresh(settings, request, learned)
    assert grown.usd_high > before.usd_high
    plan = prepare(settings, request).plan
    reused = (plan.calls[0].key,)
    assert _memoised(settings, request, prior, reused) == _fresh(settings, request, prior,
                                                                 reused) != before
    capped = _memoised(settings, request, prior, ceiling=0.5)
    assert capped == _fresh(settings, request, prior, ceiling=0.5)
    assert capped.ceiling_usd == 0.5 and capped.ceiling_configured


@pytest.mark.parametrize("mode", list(Mode))
def test_the_cap_refuses_a_memoised_estimate_as_it_refuses_a_fresh_one(mode: Mode) -> None:
    settings = _settings()
    request = DebateRequest(topic=TOPICS["medium"], mode=mode)
    fresh, memoised = _fresh(settings, request), _memoised(settings, request)
    for remaining in (0.0, fresh.usd_high / 2, fresh.usd_high * 2):
        assert refusal(memoised, remaining_usd=remaining, cap_usd=1.0) == refusal(
            fresh, remaining_usd=remaining, cap_usd=1.0)
    assert refusal(memoised, remaining_usd=0.0, cap_usd=1.0) is not None
