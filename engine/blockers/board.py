"""Pure board functions: tiles, groups and the group rule (R-BLOCKERS-3).

A board is a sequence of 81 entries, ``None`` for an empty space or a :class:`Tile`.
``neighbours[i]`` lists the orthogonal neighbours of space ``i`` (see
:attr:`BlockersEdition.neighbours`). Only colour matters here: a tile whose face the
camera could not read (``face is None``) counts exactly like any other.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple


class Tile(NamedTuple):
    """A tile on the board, in a rack or captured: its colour and face (``None`` = unread)."""

    color: str
    face: str | None

    def to_json(self) -> dict[str, str | None]:
        return {"color": self.color, "face": self.face}

    @classmethod
    def from_json(cls, data: dict) -> "Tile":
        if not isinstance(data, dict) or not isinstance(data.get("color"), str):
            raise ValueError(f"a tile is {{'color': ..., 'face': ...}}, got {data!r}")
        face = data.get("face")
        if face is not None and not isinstance(face, str):
            raise ValueError(f"a tile face is a string or null, got {face!r}")
        return cls(data["color"], face)


Board = Sequence["Tile | None"]
Neighbours = Sequence[Sequence[int]]


def group_of(board: Board, neighbours: Neighbours, index: int) -> frozenset[int]:
    """The 4-connected group of one colour that contains the tile on ``index`` (R-BLOCKERS-3)."""
    tile = board[index]
    if tile is None:
        return frozenset()
    return _component(board, neighbours, index, tile.color, excluded=-1)


def _component(board: Board, neighbours: Neighbours, start: int, color: str, excluded: int) -> frozenset[int]:
    seen = {start}
    todo = [start]
    while todo:
        v = todo.pop()
        for w in neighbours[v]:
            if w != excluded and w not in seen:
                t = board[w]
                if t is not None and t.color == color:
                    seen.add(w)
                    todo.append(w)
    return frozenset(seen)


def groups(board: Board, neighbours: Neighbours, colors: Iterable[str] | None = None) -> list[frozenset[int]]:
    """Every group on the board (of ``colors`` only, when given), in order of first space."""
    wanted = None if colors is None else set(colors)
    seen: set[int] = set()
    out = []
    for i, tile in enumerate(board):
        if tile is None or i in seen or (wanted is not None and tile.color not in wanted):
            continue
        g = _component(board, neighbours, i, tile.color, excluded=-1)
        seen |= g
        out.append(g)
    return out


def count_groups(board: Board, neighbours: Neighbours, colors: Iterable[str]) -> int:
    """Number of groups of the given colours (a lone tile is a group: R-BLOCKERS-5)."""
    return len(groups(board, neighbours, colors))


def split_parts(board: Board, neighbours: Neighbours, index: int) -> list[frozenset[int]]:
    """The pieces the group of ``index`` falls into if that tile is taken away.

    One piece means the capture keeps the group whole; none means the tile was alone.
    """
    group = group_of(board, neighbours, index)
    color = board[index].color  # type: ignore[union-attr]
    parts: list[frozenset[int]] = []
    covered: set[int] = set()
    for v in sorted(group):
        if v == index or v in covered:
            continue
        part = _component(board, neighbours, v, color, excluded=index)
        covered |= part
        parts.append(part)
    return parts


def is_capturable(board: Board, neighbours: Neighbours, index: int) -> bool:
    """R-BLOCKERS-3: a tile may be taken when its group has 1 or 2 tiles or stays one group.

    Colour only: whether the capturing tile's colour differs is the caller's check.
    """
    return len(split_parts(board, neighbours, index)) <= 1


def cut_vertices(group: frozenset[int], neighbours: Neighbours) -> set[int]:
    """Spaces of ``group`` whose removal splits it (articulation points, iterative Tarjan).

    Groups of 1 or 2 tiles have none, which is exactly R-BLOCKERS-3's "a single tile, or
    a tile from a group of two, can always be replaced".
    """
    if len(group) < 3:
        return set()
    root = min(group)
    disc = {root: 0}
    low = {root: 0}
    cuts: set[int] = set()
    root_children = 0
    counter = 1
    stack = [(root, -1, iter(neighbours[root]))]
    while stack:
        v, parent, it = stack[-1]
        descended = False
        for w in it:
            if w not in group:
                continue
            if w not in disc:
                disc[w] = low[w] = counter
                counter += 1
                stack.append((w, v, iter(neighbours[w])))
                descended = True
                break
            if w != parent and disc[w] < low[v]:
                low[v] = disc[w]
        if descended:
            continue
        stack.pop()
        if stack:
            u = stack[-1][0]
            if low[v] < low[u]:
                low[u] = low[v]
            if u == root:
                root_children += 1
            elif low[v] >= disc[u]:
                cuts.add(u)
    if root_children > 1:
        cuts.add(root)
    return cuts


def capturable_map(board: Board, neighbours: Neighbours) -> list[bool]:
    """For every space, whether its tile could be captured under the group rule (R-BLOCKERS-3).

    Empty spaces are ``False``. One pass over all groups, so enumerating every capture on a
    full board costs one articulation-point search per group instead of one per tile.
    """
    out = [False] * len(board)
    for g in groups(board, neighbours):
        cuts = cut_vertices(g, neighbours)
        for v in g:
            out[v] = v not in cuts
    return out
