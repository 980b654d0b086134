"""``python -m training.league``: run the league's roles together
(:mod:`training.league.launcher`; ``--help`` lists the options)."""

import sys

from training.league.launcher import main

sys.exit(main())
