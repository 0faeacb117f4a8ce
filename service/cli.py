"""The ``bloxcam`` command.

Each sub-command lives in its own module under :mod:`service.commands` and exposes
``register(subparsers)``; modules are discovered at start-up so a new command needs no
edit here. Commands import heavy libraries (OpenCV, FastAPI) inside their handlers, so
``bloxcam --help`` stays fast and works without optional extras.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import service.commands
from service.errors import CliError

__all__ = ["CliError", "build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bloxcam", description="Camera referee for Blox, Bloxo, Bloxx!, Blockers! and Block Out!"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(service.commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"service.commands.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return int(handler(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except CliError as exc:
        print(f"bloxcam {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
