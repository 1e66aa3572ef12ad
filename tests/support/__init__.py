"""What the tests share that is not a fake: fixtures, builders, the throwaway
PostgreSQL, the served process."""
