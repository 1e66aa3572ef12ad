"""A worker process that SIGKILLs itself as one step's write reaches the database: a process that
dies after the step's reply arrived and before its checkpoint, charge and audit link committed.

    python -m tests.support.doomed_worker DATABASE_URL STEP_KEY

(tests/integration/test_step_writes.py runs it, then resumes the debate in the test's process.)
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any

from sqlalchemy import event

from storage.db import Database
from tests.support.service_fixtures import priced, running_worker, service
from tests.support.sql_capture import inserted


def _die_at(db: Database, key: str) -> None:
    def kill(_conn: Any, _cursor: Any, statement: str, params: Any, context: Any,
             _many: bool) -> None:
        found = inserted(statement, params, context)
        if found is not None and found[0] == "steps" and any(
                row.get("key") == key for row in found[1]):
            os.kill(os.getpid(), signal.SIGKILL)

    event.listen(db.engine.sync_engine, "before_cursor_execute", kill)


async def main(url: str, key: str) -> None:
    db = Database(url)
    _die_at(db, key)
    svc = service(db, priced(daily_budget_usd=1000.0, lease_seconds=60.0))
    async with running_worker(svc, concurrency=1):
        await asyncio.sleep(120)   # killed long before, at the step's write


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
