"""Evaluation: does a debate mode pay on a set of questions with known answers?

    dataset   JSON-lines question sets: Item, Dataset, load_jsonl, one-line DatasetError
    builtin   sets for trying it without data: Du et al.'s arithmetic, a yes/no decision set
    answers   normalising a reply to a comparable answer, correctness, majority with ties
    stats     Wilson intervals, McNemar's exact test, Newcombe's paired difference interval
    report    per-mode summaries, paired comparisons, the JSON shape, readings that never overclaim
    run       running each item through the engine (the one module here that may import the
              runner, the ports and the provider door)

The five above `run` are pure: no I/O beyond reading a dataset file and the package's own data.
They import the basics at the top of engine/ and engine.oversight.inference (the interval
formulas the audits share), never the provider door, money, protocols or the runner; the whole
package imports neither storage nor bot (pyproject.toml import-linter contracts).
"""
