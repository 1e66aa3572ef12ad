"""Dialectic's persistence: SQLAlchemy 2 async models, repositories, the durable queue, the audit
chain and Alembic migrations, on SQLite (aiosqlite) or PostgreSQL (asyncpg).

Repositories are modules of functions taking `*, session` and returning engine types or the
service's records (storage/records.py); they never commit. Open a transaction with
`storage.db.Database.transaction()`. Imports `engine`, never `bot`; importing this package
itself loads nothing.
"""
