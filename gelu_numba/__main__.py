"""``python -m gelu_numba warmup [...]``: see :mod:`gelu_numba._warmup`."""

import sys

from gelu_numba import _warmup as warmup

_COMMANDS = {"warmup": warmup.main}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in _COMMANDS:
        sys.exit(f"usage: python -m gelu_numba {{{','.join(_COMMANDS)}}} [--help]")
    sys.exit(_COMMANDS[sys.argv[1]](sys.argv[2:]))
