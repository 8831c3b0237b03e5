"""``python -m squall.cli``: the same as the ``squall`` command."""

import sys

from squall.cli import main

if __name__ == "__main__":
    sys.exit(main())
