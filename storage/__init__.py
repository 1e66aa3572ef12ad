"""Dialectic's persistence: SQLAlchemy 2 async models, repositories, the durable queue, the audit
chain and Alembic migrations, on SQLite (aiosqlite) or PostgreSQL (asyncpg).

Repositories are modules of functions taking `*, session` and returning engine types; they never
commit. Open a transaction with `Database.transaction()`. Imports `engine`, never `bot`.
"""

from storage.db import Database

__all__ = ["Database"]
