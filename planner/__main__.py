"""``python -m planner``: the ``rlplan`` console script (:mod:`planner.entry`)."""

from planner.entry import main

main()
