"""``python -m jaxsoc.cli ...``: the same as the ``jaxsoc`` command."""

import sys

from jaxsoc.cli import main

if __name__ == "__main__":  # importing this module (e.g. walking the package) runs nothing
    sys.exit(main())
