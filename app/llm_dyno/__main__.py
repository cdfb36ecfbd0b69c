"""``llm-dyno``: with no arguments opens the window, otherwise runs a headless command."""

from __future__ import annotations

import sys


def main() -> None:
    """Console entry point."""
    from llm_dyno.cli import run

    sys.exit(run())


if __name__ == "__main__":
    main()
