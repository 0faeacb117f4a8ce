"""Validation of an observed Blox position on its own (in the spirit of python-chess ``status()``).

Vision may report a board no game can reach; this lists every reason, so the referee can
ask the table to look again instead of feeding the engine an impossible position.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.blox.edition import BloxEdition


class Problem(str, enum.Enum):
    MALFORMED = "malformed"
    TWO_THINGS = "two_things_on_a_space"
    UNKNOWN_COLOR = "unknown_color"
    TOWER_TOO_TALL = "tower_too_tall"
    TOO_MANY_BLOCKS = "too_many_blocks"
    TOO_MANY_FIGURES = "too_many_figures"


@dataclass(frozen=True)
class PositionProblem:
    problem: Problem
    message: str
    at: tuple[int, int] | None = None

    def __str__(self) -> str:
        return self.message


def check_position(
    edition: BloxEdition,
    cells: Any,
    player_blocks: Mapping[str, Mapping[str, int]] | None = None,
) -> list[PositionProblem]:
    """Every problem with an observed board (``cells`` as in the observation JSON).

    ``player_blocks`` (blocks in front of each player, when known) is added to the
    board's blocks before comparing with the edition's totals. An empty list means the
    position is possible.
    """
    size = edition.size
    if not isinstance(cells, list) or len(cells) != size or any(
        not isinstance(row, list) or len(row) != size for row in cells
    ):
        return [PositionProblem(Problem.MALFORMED, f"the board must be {size} rows of {size} cells")]
    problems: list[PositionProblem] = []
    blocks: Counter[str] = Counter()
    figures: Counter[str] = Counter()
    for r, row in enumerate(cells):
        for c, cell in enumerate(row):
            at = (r, c)
            if cell is None:
                continue
            if not isinstance(cell, dict) or not ({"figure", "tower"} & set(cell)):
                problems.append(PositionProblem(Problem.MALFORMED, f"[{r},{c}] is neither empty, a figure nor a tower", at))
                continue
            if "figure" in cell and "tower" in cell:
                problems.append(
                    PositionProblem(Problem.TWO_THINGS, f"[{r},{c}] holds a figure and a tower; a space holds one thing", at)
                )
            if "figure" in cell:
                color = cell["figure"]
                if color not in edition.player_colors:
                    problems.append(PositionProblem(Problem.UNKNOWN_COLOR, f"[{r},{c}]: unknown figure colour {color!r}", at))
                else:
                    figures[color] += 1
            if "tower" in cell:
                tower = cell["tower"]
                if not isinstance(tower, list) or not tower:
                    problems.append(PositionProblem(Problem.MALFORMED, f"[{r},{c}]: a tower lists its block colours", at))
                    continue
                if len(tower) > edition.max_tower_height:
                    problems.append(
                        PositionProblem(
                            Problem.TOWER_TOO_TALL,
                            f"[{r},{c}]: a tower of {len(tower)} blocks; the tallest is {edition.max_tower_height}",
                            at,
                        )
                    )
                for b in tower:
                    if b not in edition.colors:
                        problems.append(PositionProblem(Problem.UNKNOWN_COLOR, f"[{r},{c}]: unknown block colour {b!r}", at))
                    else:
                        blocks[b] += 1
    for owned in (player_blocks or {}).values():
        blocks.update({b: n for b, n in owned.items() if b in edition.colors})
    for color in edition.colors:
        if blocks[color] > edition.blocks_per_color:
            problems.append(
                PositionProblem(
                    Problem.TOO_MANY_BLOCKS,
                    f"{blocks[color]} {color} blocks counted; the edition has {edition.blocks_per_color}",
                )
            )
    for color, n in sorted(figures.items()):
        if n > edition.figures_per_player:
            problems.append(
                PositionProblem(
                    Problem.TOO_MANY_FIGURES, f"{n} {color} figures on the board; each colour has {edition.figures_per_player}"
                )
            )
    return problems
