"""``python -m nesle`` is the ``nesle`` command."""

import sys

from nesle.cli import main

sys.exit(main())
