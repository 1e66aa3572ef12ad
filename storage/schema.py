"""Every table of the schema, in one `MetaData`: storage/models.py (the tables a debate's own path
uses, which every process that runs one maps) and the tables defined beside the repositories
that use them (*_rows.py, installations.py), which a process maps only once it imports those, so
`dialectic run` maps none of them (mapping a table costs start-up time). Alembic's environment and
the test comparing the migrated schema with the models read `METADATA` from here."""

from __future__ import annotations

from storage import (  # noqa: F401  # their tables join Base.metadata
    evaluation_rows,
    installations,
    outbox_rows,
    schedule_rows,
    service_rows,
    slack_rows,
    workspace_rows,
)
from storage.models import Base

METADATA = Base.metadata

__all__ = ["METADATA"]
