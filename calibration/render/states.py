"""Random game states in the observation format, for rendered scenes.

They are plausible-looking, not necessarily reachable in a game: the recogniser reads
what is on the table, so a scene only needs pieces where pieces can physically be.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from calibration.kit import Kit
from calibration.render import textures as tx


def blox_state(kit: Kit, rng: np.random.Generator, *, towers: int = 10, figures: int = 6,
               colors: list[list[str]] | None = None) -> dict[str, Any]:
    n = kit.blox.spaces
    board = colors or tx.default_blox_colors()
    cells: list[list[Any]] = [[None] * n for _ in range(n)]
    spots = rng.permutation(n * n)[: towers + figures]
    names = list(kit.blox.colors)
    players = list(kit.blox.players)
    for k, idx in enumerate(spots):
        r, c = divmod(int(idx), n)
        if k < towers:
            height = int(rng.integers(1, kit.blox.block.max_tower + 1))
            cells[r][c] = {"tower": [str(rng.choice(names)) for _ in range(height)]}
        else:
            cells[r][c] = {"figure": str(rng.choice(players))}
    return {"colors": [list(row) for row in board], "cells": cells}


def bloxo_state(kit: Kit, rng: np.random.Generator, *, cards: int = 8) -> dict[str, Any]:
    """Cards on a connected patch of the card grid, start card at [0, 0]."""
    colors = list(kit.bloxo.colors)
    w, h = kit.bloxo.play_area_mm
    lim_x = int((w / 2 - kit.bloxo.card_mm / 2) // kit.bloxo.card_mm)
    lim_y = int((h / 2 - kit.bloxo.card_mm / 2) // kit.bloxo.card_mm)
    taken = [(0, 0)]
    while len(taken) < cards:
        x, y = taken[int(rng.integers(len(taken)))]
        dx, dy = [(1, 0), (-1, 0), (0, 1), (0, -1)][int(rng.integers(4))]
        p = (x + dx, y + dy)
        if p not in taken and abs(p[0]) <= lim_x and abs(p[1]) <= lim_y:
            taken.append(p)
    out = []
    for x, y in taken:
        kind = int(rng.integers(3))
        if kind == 0:
            q = [str(rng.choice(colors))] * 4
        elif kind == 1:
            a, b = rng.choice(colors, 2, replace=False)
            q = [str(a), str(a), str(b), str(b)]
            shift = int(rng.integers(4))
            q = q[shift:] + q[:shift]
        else:
            q = [str(v) for v in rng.permutation(colors)]
        out.append({"at": [x, y], "quadrants": [[c, kit.bloxo.shapes[c]] for c in q]})
    return {"cards": out}


def blockers_state(kit: Kit, rng: np.random.Generator, *, tiles: int = 20) -> dict[str, Any]:
    n = kit.blockers.spaces
    colors = list(kit.blockers.colors)
    syms = tx.blockers_symbols()
    cells: list[list[Any]] = [[None] * n for _ in range(n)]
    for idx in rng.permutation(n * n)[:tiles]:
        r, c = divmod(int(idx), n)
        kind = int(rng.integers(4))
        face = ("ABCDEFGHI"[r], str(c + 1), syms[(r // 3) * 3 + c // 3], "wild")[kind]
        cells[r][c] = {"color": str(rng.choice(colors)), "face": face}
    return {"cells": cells}


def blockout_state(kit: Kit, rng: np.random.Generator, *, blocks: int = 5) -> dict[str, Any]:
    pieces = [(c, s) for c in kit.blockout.colors for s in kit.blockout.sizes]
    order = rng.permutation(len(pieces))[:blocks]
    return {"stack": [{"color": pieces[i][0], "size": pieces[i][1]} for i in order]}


def random_state(kit: Kit, game: str, rng: np.random.Generator) -> dict[str, Any]:
    if game == "blox":
        return blox_state(kit, rng, towers=int(rng.integers(4, 16)), figures=int(rng.integers(0, 9)))
    if game == "bloxo":
        return bloxo_state(kit, rng, cards=int(rng.integers(3, 12)))
    if game == "blockers":
        return blockers_state(kit, rng, tiles=int(rng.integers(5, 30)))
    if game == "blockout":
        return blockout_state(kit, rng, blocks=int(rng.integers(1, 10)))
    raise ValueError(f"unknown game {game!r}")


def empty_state(kit: Kit, game: str, colors: list[list[str]] | None = None) -> dict[str, Any]:
    n = kit.blox.spaces
    if game == "blox":
        return {"colors": [list(r) for r in (colors or tx.default_blox_colors())], "cells": [[None] * n for _ in range(n)]}
    if game == "blockers":
        return {"cells": [[None] * kit.blockers.spaces for _ in range(kit.blockers.spaces)]}
    if game == "bloxo":
        return {"cards": []}
    return {"stack": []}
