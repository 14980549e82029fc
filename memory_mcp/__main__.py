import sys

from .edges.cli import main

sys.exit(main())
