import sys

if sys.argv[1:2] == ["merge-driver"]:  # git runs it once per merged file: skip the CLI's imports
    from .edges.merge_driver import run as merge_driver

    merge_driver(sys.argv[2:])

from .edges.cli import main

sys.exit(main())
