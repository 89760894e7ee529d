"""`python -m self_refine.cli`: the `self-refine` program."""

import sys

from self_refine.cli.main import main

sys.exit(main())
