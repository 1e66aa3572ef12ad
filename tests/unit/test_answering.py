"""Which model a call is priced as (engine/money/answering.py): what answered for the name at this
endpoint, else the name when the price catalogue knows it, else the pessimistic stand-in."""

from __future__ import annotations

import pytest

from engine.money.answering import STAND_IN, AnsweringModels, endpoint_key
from engine.settings import EngineSettings, ModelPrice

AZURE = "https://acme.openai.azure.com/openai/v1"


@pytest.mark.parametrize(("base_url", "key"), [
    (None, "https://api.openai.com/v1"),
    ("https://api.openai.com/v1/", "https://api.openai.com/v1"),
    ("http://user:secret@127.0.0.1:8900/v1?api-key=k", "http://127.0.0.1:8900/v1"),
    ("HTTPS://ACME.openai.azure.com/openai/v1", "https://acme.openai.azure.com/openai/v1"),
])
def test_an_endpoint_is_named_without_credentials_or_query(base_url: str | None,
                                                            key: str) -> None:
    assert endpoint_key(base_url) == key


@pytest.mark.parametrize(("asked", "answered", "priced"), [
    ("prod-reasoner", None, STAND_IN),                 # unknown, never answered: pessimistic
    ("prod-reasoner", "o1-2024-12-17", "o1-2024-12-17"),   # what answers
    ("gpt-4o-mini", None, "gpt-4o-mini"),              # the catalogue knows it
    ("gpt-4o-mini", "o3-2025-04-16", "o3-2025-04-16"),     # a known name hiding another model
    ("house-model", None, "house-model"),              # configured: its price is known
    ("llama-local", "llama-local", "llama-local"),     # answered as itself: the default price
])
def test_a_call_is_priced_as_what_answers_for_its_name(asked: str, answered: str | None,
                                                        priced: str) -> None:
    settings = EngineSettings(openai_api_key="k", openai_base_url=AZURE,
                              prices={"house-model": ModelPrice(input=1, output=2)})
    if answered is not None:
        assert settings.answers.learn(settings.endpoint_key, asked, answered)
    assert settings.priced_model(asked) == priced
    # a copy of the settings (as the service makes) shares what was learned
    assert settings.model_copy(update={"temperature": 0.2}).priced_model(asked) == priced


def test_what_one_endpoint_answered_is_not_taken_for_another() -> None:
    book = AnsweringModels()
    assert book.learn("https://a/v1", "prod", "o1-2024-12-17")
    assert not book.learn("https://a/v1", "prod", "o1-2024-12-17")   # no news: not stored again
    assert book.answering("https://b/v1", "prod") is None
    assert book.known("https://a/v1") == {"prod": "o1-2024-12-17"}


def test_a_rehearsal_is_priced_as_the_free_offline_model() -> None:
    assert EngineSettings().priced_model("prod-reasoner") == "rehearsal"


def test_what_the_book_learns_or_merges_later_reprices_at_once() -> None:
    """Prices are remembered per model; news in the book of answers forgets them."""
    settings = EngineSettings(openai_api_key="k", openai_base_url=AZURE)
    assert settings.priced_model("prod-deployment") == STAND_IN
    settings.answers.learn(endpoint_key(AZURE), "prod-deployment", "gpt-4o-mini")
    assert settings.priced_model("prod-deployment") == "gpt-4o-mini"
    settings.answers.merge(endpoint_key(AZURE), {"prod-deployment": "gpt-4o"})
    assert settings.priced_model("prod-deployment") == "gpt-4o"


def test_a_copy_with_other_prices_quotes_its_own() -> None:
    settings = EngineSettings(openai_api_key="k")
    library = settings.price_quote("gpt-4o-mini")
    copy = settings.model_copy(update={"prices": {"gpt-4o-mini": ModelPrice(input=9, output=9)}})
    assert copy.price_quote("gpt-4o-mini").price == ModelPrice(input=9, output=9)
    assert settings.price_quote("gpt-4o-mini") == library and library.source == "library"
