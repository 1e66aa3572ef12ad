"""The base of every reply schema, and the numeric fields they share.

No reply field carries a length limit: length is asked for in the prompt, never refused. Numeric
ranges stay (an out-of-range number is re-asked) and are also said in the field's description,
because a portable schema sent to the provider drops the range keywords and keeps only the words.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

SCORE_RANGE = "an integer from 1 to 10"
UNIT_RANGE = "a number from 0 to 1"


class StrictReply(BaseModel):
    """A model reply: fields the schema does not name are refused, so a reply is what we asked."""

    model_config = ConfigDict(extra="forbid")


def _words(description: str, rng: str) -> str:
    return f"{description}: {rng}" if description else rng


def score(description: str = "") -> Any:
    """A 1-10 integer field, its range in its description too."""
    return Field(ge=1, le=10, description=_words(description, SCORE_RANGE))


def unit(description: str = "") -> Any:
    """A 0-1 number field (a confidence), its range in its description too."""
    return Field(ge=0, le=1, description=_words(description, UNIT_RANGE))
