"""``python -m planner``: the ``rlplan`` console script (:mod:`planner.cli.entry`)."""

from planner.cli.entry import main

main()
