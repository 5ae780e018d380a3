import sys

from .runtime import main

sys.exit(main())
