"""Building hand-made Blox positions for tests."""

from __future__ import annotations

import dataclasses
from collections import Counter

from engine.blox import BloxGame, BloxState, Figure, PlayerState, Tower, load_edition

LETTER = {"k": "black", "w": "white", "g": "grey", "p": "purple"}
PLAYERS = ("green", "brown", "blue", "yellow")


def F(color: str) -> Figure:
    return Figure(color)


def T(blocks: str) -> Tower:
    """A tower from colour letters bottom to top: T('gwp') is grey, white, purple."""
    return Tower(tuple(LETTER[b] for b in blocks))


def cards(text: str) -> tuple[str, ...]:
    """Cards from colour letters: cards('ggw') is two grey and a white."""
    return tuple(LETTER[ch] for ch in text.replace(" ", ""))


def scenario(
    colors: list[str] | None = None,
    pieces: dict[tuple[int, int], Figure | Tower] | None = None,
    players: tuple[str, ...] = PLAYERS,
    phase: int = 3,
    hands: dict[str, str] | None = None,
    blocks: dict[str, str] | None = None,
    points: dict[str, int] | None = None,
    jokers: dict[str, bool] | None = None,
    current: int = 0,
    table_mode: bool = False,
) -> BloxState:
    """A full-information state (or a table-mode one) with exactly the given pieces.

    ``colors`` is 9 strings of colour letters (k w g p) for the board; default is the
    edition's board. Hands default to five cards of black/white/grey/purple/grey.
    """
    edition = load_edition()
    if colors is not None:
        # A free-form colour layout for a rule test, not a playable edition: the set-up
        # checks (tower marks per colour) do not apply, so validation is bypassed.
        edition = dataclasses.replace(edition, board=tuple(tuple(LETTER[ch] for ch in row) for row in colors))
    game = BloxGame(players, edition)
    board = [None] * 81
    for (r, c), piece in (pieces or {}).items():
        board[r * 9 + c] = piece
    hands = hands or {}
    blocks = blocks or {}
    player_states = []
    for color in players:
        hand = None if table_mode else cards(hands.get(color, "kwgpg"))
        owned = Counter(cards(blocks.get(color, "")))
        player_states.append(
            PlayerState(
                color,
                points=(points or {}).get(color, 0),
                blocks=tuple((c, owned[c]) for c in edition.colors if owned[c]),
                hand=hand,
                joker_up=(jokers or {}).get(color, True),
            )
        )
    in_hands = Counter(c for p in player_states for c in (p.hand or ()))
    deck = Counter({c: edition.cards_per_color for c in edition.colors}) - in_hands
    draw = None if table_mode else tuple(sorted(deck.elements()))
    return BloxState(
        game=game,
        board=tuple(board),
        players=tuple(player_states),
        phase=phase,
        turn=current,
        draw_pile=draw,
        discard_pile=None if table_mode else (),
        seed=1,
    )


def uniform(color: str = "w") -> list[str]:
    return [color * 9] * 9


def with_row(rows: list[str], r: int, text: str) -> list[str]:
    rows = list(rows)
    rows[r] = text
    return rows


def with_col(rows: list[str], c: int, text: str) -> list[str]:
    rows = [list(row) for row in rows]
    for r, ch in enumerate(text):
        rows[r][c] = ch
    return ["".join(row) for row in rows]
