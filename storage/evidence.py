"""Human evidence added to running debates (thread replies), read by the engine between phases.

A Slack message can arrive twice (retries, two replicas): `source_id` (e.g. channel:ts) is
unique, so it is stored once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from sqlalchemy import Table, select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.domain import Evidence
from storage.arrays import PerDialect, among
from storage.db import Database, ignoring_insert, write
from storage.journal import lookups_for
from storage.models import EvidenceRow


async def add(session: AsyncSession, *, debate_id: str, evidence: Evidence) -> bool:
    """Store the evidence; False when its `source_id` was stored before."""
    values = {"debate_id": debate_id, "author": evidence.author, "text": evidence.text,
              "source_id": evidence.source_id or None, "at": evidence.at}
    result = await write(session, ignoring_insert(session, EvidenceRow, conflict=("source_id",),
                                                  returning=("id",)), values)
    return result.scalar_one_or_none() is not None


async def list_for(session: AsyncSession, debate_id: str) -> list[Evidence]:
    """A debate's evidence, oldest first."""
    rows = await session.scalars(
        select(EvidenceRow).where(EvidenceRow.debate_id == debate_id)
        .order_by(EvidenceRow.at, EvidenceRow.id)
    )
    return [Evidence(author=r.author, text=r.text, at=r.at, source_id=r.source_id or "")
            for r in rows]


async def list_for_many(session: AsyncSession, debate_ids: list[str], fresh: bool
                        ) -> tuple[list[list[Evidence]], None]:
    """`list_for` of many debates in one query (a batch function of `lookups_for`)."""
    rows = await write(session, _EVIDENCE_OF(session), {"ids": list(set(debate_ids))})
    found: dict[str, list[Evidence]] = {}
    for r in rows:
        found.setdefault(r.debate_id, []).append(
            Evidence(author=r.author, text=r.text, at=r.at, source_id=r.source_id or ""))
    return [list(found.get(debate_id, ())) for debate_id in debate_ids], None


_EVIDENCE = cast(Table, EvidenceRow.__table__)
#: the evidence of a list of debates (built once: `write`)
_EVIDENCE_OF = PerDialect(lambda dialect: select(
    _EVIDENCE.c.debate_id, _EVIDENCE.c.author, _EVIDENCE.c.text, _EVIDENCE.c.at,
    _EVIDENCE.c.source_id)
    .where(among(_EVIDENCE.c.debate_id, "ids", dialect))
    .order_by(_EVIDENCE.c.debate_id, _EVIDENCE.c.at, _EVIDENCE.c.id))


class DbEvidenceSource:
    """engine.ports.EvidenceSource on the database. Running debates read their evidence between
    phases, many at the same moment: those reads share one query (`lookups_for`)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def evidence(self, debate_id: str) -> Sequence[Evidence]:
        found: list[Evidence] = await lookups_for(self.db).read(list_for_many, debate_id)
        return found
