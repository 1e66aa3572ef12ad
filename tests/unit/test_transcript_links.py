"""Which posted links are this service's transcript links (the ones that unfurl as debates)."""

from __future__ import annotations

import pytest

from bot.service.links import debate_id_of
from bot.service.settings import ServiceSettings


@pytest.mark.parametrize(("public_url", "url", "found"), [
    ("https://d.example.com", "https://d.example.com/debates/abc123", "abc123"),
    ("https://d.example.com/", "https://D.example.com/debates/abc123/?exp=1&sig=x", "abc123"),
    ("https://d.example.com/app", "https://d.example.com/app/debates/abc", "abc"),
    ("https://d.example.com/app", "https://d.example.com/debates/abc", None),
    ("https://d.example.com", "http://d.example.com/debates/abc", None),       # other scheme
    ("https://d.example.com", "https://evil.example.com/debates/abc", None),   # other host
    ("https://d.example.com", "https://d.example.com/debates/", None),
    ("https://d.example.com", "https://d.example.com/debates/a/b", None),
    ("https://d.example.com", "https://d.example.com/reviews/abc", None),
    ("https://d.example.com", "https://d.example.com/debates/" + "x" * 65, None),
])
def test_only_this_services_transcript_links_name_a_debate(public_url: str, url: str,
                                                          found: str | None) -> None:
    assert debate_id_of(ServiceSettings(public_url=public_url), url) == found
