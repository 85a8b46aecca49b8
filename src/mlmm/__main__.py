"""``python -m mlmm`` is the ``mlmm`` command."""

import sys

from mlmm.cli import main

sys.exit(main())
