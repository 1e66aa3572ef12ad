"""Acceptance tests: whole processes (`dialectic ...`, `python -m bot`,
ServedProcess) and the console in a real browser."""
