"""``python -m pkernels cache info|clear`` (see :mod:`pkernels.cache_command`)."""

import sys

from pkernels.cache_command import main

sys.exit(main())
