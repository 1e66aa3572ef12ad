"""The base of every reply schema."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictReply(BaseModel):
    """A model reply: fields the schema does not name are refused, so a reply is what we asked."""

    model_config = ConfigDict(extra="forbid")
