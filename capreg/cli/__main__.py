"""`python -m capreg.cli`: the same as the `capreg` script."""

import sys

from capreg.cli import main

sys.exit(main())
