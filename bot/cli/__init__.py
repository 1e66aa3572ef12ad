"""The `dialectic` command line (a surface): argparse commands, terminal progress.

    parser.py    the grammar; each command's handler named with set_defaults(func=...)
    app.py       running a command: settings, dispatch, one-line errors and exit statuses
    host.py      what the commands need from the process (the composition root provides it)
    debate.py    run, in this terminal
    plans.py     estimate: planning only, no provider client, no statistics
    presets.py   presets: the settings only
    service.py   serve / worker / db / audit / replay
    schedule.py  schedule list / run
    reviews.py   reviews list / decide, reviewers link
    oversight.py judges report, thresholds show / suggest / apply
    progress.py  the live progress panel and the summaries
"""
