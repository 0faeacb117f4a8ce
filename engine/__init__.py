"""Rules engines for the Blox family of games: pure Python, no I/O.

See :mod:`engine.common` for the conventions every game follows.
"""

from engine.common import EditionError, IllegalAction, Verdict, VerdictKind

__all__ = ["EditionError", "IllegalAction", "Verdict", "VerdictKind"]
