"""The test tree, by scope (as procrastinate's tests/unit, tests/integration, tests/acceptance):

unit/         pure code: no socket, database, subprocess or browser (tests/unit/conftest.py
              refuses them); `make test-fast` runs this folder
integration/  real SQLite and PostgreSQL, the fakes on loopback, the real servers in process
acceptance/   whole processes (`dialectic ...`, `python -m bot`, ServedProcess) and the console
              in headless Chromium
support/      shared fixtures and builders, the throwaway PostgreSQL, the served process
fakes/        the fake OpenAI-compatible provider and the fake Slack, real servers on port 0
benchmarks/, soak.py, screenshots.py: harnesses run by `make bench`, `make soak`, `make screenshots`
"""
