"""``python -m transferlab ...``: the same as the ``transferlab`` command."""

import sys

from transferlab.cli import main

if __name__ == "__main__":
    sys.exit(main())
