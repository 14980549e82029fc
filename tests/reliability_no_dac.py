"""Run `python ARGS...` without the capabilities that let root ignore file modes.

Usage: python tests/reliability_no_dac.py [python args...]

As root on Linux: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the bounding set, then exec Python,
so the new process is checked against file modes like any account (a 0o444 file cannot be written, a 0o555
directory cannot gain files). Not root: exec directly, modes already apply. Exits 3 when the drop fails.
"""

from __future__ import annotations

import ctypes
import os
import sys

PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE = 1
CAP_DAC_READ_SEARCH = 2


def main() -> None:
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        if not sys.platform.startswith("linux"):
            sys.exit(3)
        libc = ctypes.CDLL(None, use_errno=True)
        for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
            if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                print(f"prctl(PR_CAPBSET_DROP, {cap}) failed: errno {ctypes.get_errno()}", file=sys.stderr)
                sys.exit(3)
    os.execv(sys.executable, [sys.executable, *sys.argv[1:]])


if __name__ == "__main__":
    main()
