"""Helpers for the Blockers! tests: hand-built positions from board diagrams.

A diagram is 9 lines (rows A..I) of 9 whitespace-separated tokens (columns 1..9): ``.`` for
an empty space, a colour initial (``r g b y v``) for a tile whose face the helper picks (a
face that fits the space, R-BLOCKERS-2, unique within its colour), or ``r:5`` to name it.
"""

from __future__ import annotations

import random

from engine.blockers import BlockersGame, BlockersState, Tile

INITIAL = {"r": "red", "g": "green", "b": "blue", "y": "yellow", "v": "violet"}


def parse_diagram(game: BlockersGame, diagram: str, reserved: dict[str, set[str]] | None = None) -> list[Tile | None]:
    """The board of a diagram; auto-picked faces avoid ``reserved[colour]``."""
    e = game.edition
    lines = [ln.split() for ln in diagram.strip().splitlines() if ln.strip()]
    assert len(lines) == 9 and all(len(ln) == 9 for ln in lines), "diagram must be 9 x 9"
    wanted: dict[int, tuple[str, str | None]] = {}
    for r, row in enumerate(lines):
        for c, tok in enumerate(row):
            if tok == ".":
                continue
            colour, _, face = tok.partition(":")
            wanted[r * 9 + c] = (INITIAL[colour], face or None)
    board: list[Tile | None] = [None] * 81
    for colour in set(c for c, _ in wanted.values()):
        fixed = {i: f for i, (c, f) in wanted.items() if c == colour and f is not None}
        free = [i for i, (c, f) in wanted.items() if c == colour and f is None]
        for i, f in fixed.items():
            assert e.allows(f, i), f"{colour} {f} cannot lie on {e.space_name(i)}"
        taken = set(fixed.values()) | set((reserved or {}).get(colour, ()))
        assignment = _match(free, {i: list(e.faces_for_space(i)) for i in free}, taken)
        for i, f in {**fixed, **assignment}.items():
            board[i] = Tile(colour, f)
    return board


def _match(spaces: list[int], options: dict[int, list[str]], taken: set[str]) -> dict[int, str]:
    """Bipartite matching of spaces to distinct faces (augmenting paths)."""
    owner: dict[str, int] = {}

    def augment(space: int, seen: set[str]) -> bool:
        for f in options[space]:
            if f in taken or f in seen:
                continue
            seen.add(f)
            if f not in owner or augment(owner[f], seen):
                owner[f] = space
                return True
        return False

    for s in spaces:
        assert augment(s, set()), "no face assignment fits this diagram"
    return {s: f for f, s in owner.items()}


def build(
    game: BlockersGame,
    diagram: str,
    racks: dict[str, list[str]] | None = None,
    current: int = 0,
    captured: dict[str, dict[str, list[str]]] | None = None,
) -> BlockersState:
    """A full-information position. Racks not given get the first unused faces (up to the
    rack size); the remaining faces form the supply, in edition order."""
    e = game.edition
    state = game.new_initial_state(random.Random(0), first_player=current)
    racks = racks or {}
    captured = captured or {}
    reserved: dict[str, set[str]] = {c: set(f) for c, f in racks.items()}
    for d in captured.values():
        for c, faces in d.items():
            reserved.setdefault(c, set()).update(faces)
    state.board = parse_diagram(game, diagram, reserved)
    state.captured = {p.name: {c: list(v) for c, v in captured.get(p.name, {}).items()} for p in game.players}
    for colour in game.colors:
        used = {t.face for t in state.board if t is not None and t.color == colour}
        for d in state.captured.values():
            used.update(d.get(colour, []))
        rest = [f for f in e.faces if f not in used]
        if colour in racks:
            rack = list(racks[colour])
            assert set(rack) <= set(rest), f"{colour} rack {rack} overlaps the board or captured tiles"
        else:
            rack = rest[: e.rack_size]
        rest = [f for f in rest if f not in rack]
        rack_tiles, supply = rack, rest
        state.racks[colour] = rack_tiles
        state.supplies[colour] = supply
    state.validate()
    return state


def snapshot(state: BlockersState) -> tuple:
    """Everything that must not change after an illegal action."""
    return (state.to_json(), state.history, state._snapshot())


def diagram(tiles: dict[str, str]) -> str:
    """A diagram from ``{"E5": "b", "E6": "r:6"}`` (space name -> token)."""
    grid = [["."] * 9 for _ in range(9)]
    for name, tok in tiles.items():
        r = "ABCDEFGHI".index(name[0])
        c = int(name[1:]) - 1
        grid[r][c] = tok
    return "\n".join(" ".join(row) for row in grid)


def line(spaces: str, token: str) -> dict[str, str]:
    """``line("D4 E4 F4", "b")`` -> the same token on every named space."""
    return {s: token for s in spaces.split()}
