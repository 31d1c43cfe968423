#!/bin/sh
# Weights mapped from the file (ted quantize --layout mapped): the checks
# of tests/cli/mmap_check.py (its docstring lists them), in Debian's Python
# (NumPy, PyTorch).
PYTHON=${PYTHON:-/usr/bin/python3}
exec "$PYTHON" tests/cli/mmap_check.py
