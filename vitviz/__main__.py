"""``python -m vitviz <command>``: the ``vitviz`` command (``vitviz.cli``) without installing its script."""

import sys

from vitviz.cli import main

sys.exit(main())
