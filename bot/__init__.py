"""Everything above the debate, in layers (see each sub-package's docstring):

    main.py                the `dialectic` entry point (parses, then loads processes.py)
    processes.py, assembly.py, settings.py
                           the composition root: a command's process, the wiring, settings
    slack/ http/ cli/      the surfaces (they do not import each other)
    scheduling/            digests and briefs on a schedule
    service/               the application layer every surface calls

Dependencies point down: surfaces -> scheduling -> service -> storage -> engine; import-linter
contracts in pyproject.toml keep it so.
"""
