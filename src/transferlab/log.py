"""One line of progress or a warning for the user, on stderr, prefixed ``[transferlab]``."""

from __future__ import annotations

import sys


def log(message: str) -> None:
    print(f"[transferlab] {message}", file=sys.stderr, flush=True)
