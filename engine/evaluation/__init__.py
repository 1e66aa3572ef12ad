"""Evaluation: does a debate mode answer questions with known answers better than a single call
or a majority vote, and at what cost? Datasets, answer normalisation, statistics and the report
are pure; `run.py` runs one item in one mode through the engine."""
