"""`python -m registry.cli`: the same as the `capreg` script."""

import sys

from registry.cli import main

sys.exit(main())
