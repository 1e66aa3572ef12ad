"""Readers' feedback, pure parts: the agreement definition per routing, counting per preset (one
reader one thumb, ties no reading, rehearsals apart), the feedback blocks and their values, the
"Why?" form, and how every surface words the counts."""

from __future__ import annotations

import pytest
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

from bot.service.figures import feedback_text
from bot.slack.views import feedback as F
from engine.oversight.feedback import (
    FeedbackLabel,
    PresetFeedback,
    feedback_by_preset,
    readers_agree,
)
from engine.vocabulary import Routing


@pytest.mark.parametrize(("routing", "up", "down", "agrees"), [
    (Routing.AUTO_APPROVE, 2, 1, True),
    (Routing.AUTO_APPROVE, 1, 2, False),
    (Routing.TENTATIVE, 1, 0, True),
    (Routing.NONE, 1, 0, None),           # a mode without a panel: no routing to agree with
    (Routing.HUMAN_REVIEW, 0, 1, True),   # readers doubt what routing held back
    (Routing.ESCALATE, 3, 1, False),
    (Routing.HUMAN_REVIEW, 2, 2, None),   # a tie is no reading
    (Routing.AUTO_APPROVE, 0, 0, None),
])
def test_readers_agree_with_the_routing(routing: Routing, up: int, down: int,
                                        agrees: bool | None) -> None:
    assert readers_agree(routing, up, down) is agrees


def _label(debate: str, rating: str | None, *, preset: str = "decision",
           routing: Routing = Routing.AUTO_APPROVE, rehearsal: bool = False) -> FeedbackLabel:
    return FeedbackLabel(debate_id=debate, preset=preset, routing=routing,
                         rating=rating, rehearsal=rehearsal)  # type: ignore[arg-type]


def test_counts_per_preset_with_ties_reasons_and_rehearsals_apart() -> None:
    labels = [
        _label("a", "up"), _label("a", "up"), _label("a", "down"),       # read 👍: agrees
        _label("b", "down", routing=Routing.ESCALATE),                   # read 👎: agrees
        _label("c", "up"), _label("c", "down"),                          # tie: no reading
        _label("d", None),                                               # a reason only
        _label("e", "up", rehearsal=True), _label("e", "down", rehearsal=True),
        _label("f", "down", preset="market"),                            # read 👎: disagrees
    ]
    counted = feedback_by_preset(labels)
    assert list(counted) == ["decision", "market"]
    assert counted["decision"] == PresetFeedback(preset="decision", up=3, down=3, rated=2,
                                                 agreeing=2, rehearsal=2, agreement=1.0)
    assert counted["market"] == PresetFeedback(preset="market", up=0, down=1, rated=1,
                                               agreeing=0, agreement=0.0)
    panelless = feedback_by_preset([_label("g", "up", preset="critique",
                                           routing=Routing.NONE)])
    assert panelless["critique"] == PresetFeedback(preset="critique", up=1, unrouted=1)
    only_rehearsals = feedback_by_preset([_label("e", "up", rehearsal=True)])
    assert only_rehearsals["decision"].agreement is None
    assert only_rehearsals["decision"].up == 0


@pytest.mark.parametrize(("counts", "text"), [
    (PresetFeedback(preset="p", up=3, down=1, rated=3, agreeing=2, agreement=2 / 3),
     "👍 3 · 👎 1 · readers agree with the routing on 2 of 3 rated results (66.7%)"),
    (PresetFeedback(preset="p", up=1, down=1, rehearsal=4),
     "👍 1 · 👎 1 · no result with a majority of thumbs yet · 4 on rehearsals, not counted"),
    (PresetFeedback(preset="p", up=2, down=0, unrouted=2),
     "👍 2 · 👎 0 · no routing to agree with (2 result(s) of a mode without a judge panel)"),
    (PresetFeedback(preset="p", up=2, down=1, rated=1, agreeing=1, agreement=1.0, unrouted=1),
     "👍 2 · 👎 1 · readers agree with the routing on 1 of 1 rated results (100%) · "
     "1 result(s) without a panel have no routing"),
])
def test_every_surface_words_the_counts_the_same(counts: PresetFeedback, text: str) -> None:
    assert feedback_text(counts) == text


def test_the_buttons_carry_only_the_rating_and_the_id_and_are_valid_block_kit() -> None:
    blocks = F.feedback_blocks("d" * 64)
    parsed = Block.parse_all(blocks)
    assert [b.type for b in parsed if b is not None] == ["context_actions", "actions"]
    thumbs = blocks[0]["elements"][0]
    assert thumbs["type"] == "feedback_buttons" and thumbs["action_id"] == F.FEEDBACK_ACTION
    assert thumbs["positive_button"]["value"] == "up:" + "d" * 64
    assert thumbs["negative_button"]["value"] == "down:" + "d" * 64
    assert blocks[1]["elements"][0]["value"] == "d" * 64


@pytest.mark.parametrize(("value", "parsed"), [
    ("up:abc", ("up", "abc")), ("down:a:b", ("down", "a:b")), ("up:", None),
    ("sideways:abc", None), ("", None), ("abc", None),
])
def test_a_button_value_parses_only_as_sent(value: str, parsed: tuple[str, str] | None) -> None:
    assert F.parse_value(value) == parsed


def test_the_why_form_is_a_valid_bounded_modal() -> None:
    view = F.why_modal("abc", max_reason=500)
    View(**view).to_dict()
    assert view["private_metadata"] == "abc" and view["callback_id"] == F.WHY_MODAL
    reason = next(b for b in view["blocks"] if b.get("block_id") == F.REASON_BLOCK)
    assert reason["element"]["max_length"] == 500 and not reason.get("optional")
    said = F.thanks("down", "up", rehearsal=True)
    assert "👎 Not helpful replaces your 👍 Helpful" in said.text
    View(**F.thanks_view(said)).to_dict()
