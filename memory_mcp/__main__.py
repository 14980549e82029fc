import sys

if sys.argv[1:2] == ["merge-driver"]:  # git runs it once per merged file: skip the CLI's imports
    from .edges.merge_driver import run as merge_driver

    merge_driver(sys.argv[2:])

try:
    from .edges.cli import main
except KeyboardInterrupt:  # a Ctrl-C while the program is still loading: one line, not a traceback
    print("memory-mcp: interrupted (Ctrl-C)", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
