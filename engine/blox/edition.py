"""The Blox edition: everything about the physical game that is data, not rules (R-BLOX-14)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.common import EditionError, load_edition_data, require

Pos = tuple[int, int]


@dataclass(frozen=True)
class TwoPlayerSetup:
    """R-BLOX-13: what changes with two players."""

    blocks_removed_per_color: int
    extra_two_towers_on: tuple[str, ...]
    start_phase: int


@dataclass(frozen=True)
class BloxEdition:
    """A validated Blox edition.

    ``board[r][c]`` is the colour of the space at row ``r`` (0 = far edge) and column
    ``c`` (0 = left), R-BLOX-1. ``marks[r][c]`` is the number of small squares printed
    on the space: the height of the tower placed there at set-up (0 for none).
    """

    name: str
    colors: tuple[str, ...]
    blocks_per_color: int
    cards_per_color: int
    jokers: int
    hand_size: int
    figures_per_player: int
    player_colors: tuple[str, ...]
    max_tower_height: int
    phases: int
    two_player: TwoPlayerSetup
    board: tuple[tuple[str, ...], ...]
    marks: tuple[tuple[int, ...], ...]

    @property
    def size(self) -> int:
        return len(self.board)

    @property
    def total_blocks(self) -> int:
        return self.blocks_per_color * len(self.colors)

    @property
    def total_cards(self) -> int:
        return self.cards_per_color * len(self.colors)

    def color_at(self, pos: Pos) -> str:
        return self.board[pos[0]][pos[1]]

    def marked_spaces(self, height: int) -> list[Pos]:
        """Spaces carrying ``height`` tower marks, in reading order."""
        return [
            (r, c) for r in range(self.size) for c in range(self.size) if self.marks[r][c] == height
        ]

    def with_board(self, board: list[list[str]]) -> BloxEdition:
        """The same edition with a surveyed board colour map (calibration overrides the default)."""
        data = self.to_json()
        data["board"] = board
        return parse_edition(data, "surveyed board")

    def to_json(self) -> dict[str, Any]:
        return {
            "game": "blox",
            "name": self.name,
            "colors": list(self.colors),
            "blocks_per_color": self.blocks_per_color,
            "cards_per_color": self.cards_per_color,
            "jokers": self.jokers,
            "hand_size": self.hand_size,
            "figures_per_player": self.figures_per_player,
            "player_colors": list(self.player_colors),
            "max_tower_height": self.max_tower_height,
            "phases": self.phases,
            "two_player": {
                "blocks_removed_per_color": self.two_player.blocks_removed_per_color,
                "extra_two_towers_on": list(self.two_player.extra_two_towers_on),
                "start_phase": self.two_player.start_phase,
            },
            "board": [list(row) for row in self.board],
            "marks": [list(row) for row in self.marks],
        }


def load_edition(path: str | Path | None = None) -> BloxEdition:
    """Load and validate an edition file (the bundled default when ``path`` is None)."""
    data = load_edition_data("blox", path)
    return parse_edition(data, str(path) if path else "bundled blox edition")


def parse_edition(data: dict[str, Any], where: str = "edition") -> BloxEdition:
    """Validate edition data, raising :class:`EditionError` with a precise sentence."""
    try:
        colors = tuple(data["colors"])
        two = data["two_player"]
        edition = BloxEdition(
            name=str(data.get("name", "Blox")),
            colors=colors,
            blocks_per_color=int(data["blocks_per_color"]),
            cards_per_color=int(data["cards_per_color"]),
            jokers=int(data["jokers"]),
            hand_size=int(data["hand_size"]),
            figures_per_player=int(data["figures_per_player"]),
            player_colors=tuple(data["player_colors"]),
            max_tower_height=int(data["max_tower_height"]),
            phases=int(data["phases"]),
            two_player=TwoPlayerSetup(
                blocks_removed_per_color=int(two["blocks_removed_per_color"]),
                extra_two_towers_on=tuple(two["extra_two_towers_on"]),
                start_phase=int(two["start_phase"]),
            ),
            board=tuple(tuple(row) for row in data["board"]),
            marks=tuple(tuple(int(m) for m in row) for row in data["marks"]),
        )
    except KeyError as exc:
        raise EditionError(f"{where}: missing field {exc.args[0]!r}") from exc
    except (TypeError, ValueError) as exc:
        raise EditionError(f"{where}: malformed field ({exc})") from exc
    _validate(edition, where)
    return edition


def _validate(ed: BloxEdition, where: str) -> None:
    require(len(set(ed.colors)) == len(ed.colors) >= 1, f"{where}: colours must be distinct")
    require(
        not set(ed.colors) & set(ed.player_colors),
        f"{where}: player colours {sorted(set(ed.colors) & set(ed.player_colors))} "
        "are also space colours; figures must be told apart from spaces",
    )
    require(len(ed.player_colors) >= 4, f"{where}: need 4 player colours, got {len(ed.player_colors)}")
    size = len(ed.board)
    require(size >= 3, f"{where}: board must have at least 3 rows")
    for r, row in enumerate(ed.board):
        require(len(row) == size, f"{where}: board row {r} has {len(row)} spaces, expected {size}")
        for c, color in enumerate(row):
            require(color in ed.colors, f"{where}: space [{r},{c}] has unknown colour {color!r}")
    require(len(ed.marks) == size, f"{where}: marks has {len(ed.marks)} rows, expected {size}")
    for r, row in enumerate(ed.marks):
        require(len(row) == size, f"{where}: marks row {r} has {len(row)} entries, expected {size}")
        for c, mark in enumerate(row):
            require(
                0 <= mark < ed.max_tower_height,
                f"{where}: space [{r},{c}] carries {mark} tower marks; a set-up tower has "
                f"1 to {ed.max_tower_height - 1} blocks",
            )
    marked = sum(sum(row) for row in ed.marks)
    require(
        marked == ed.total_blocks,
        f"{where}: the tower marks add up to {marked} blocks but the edition has "
        f"{ed.blocks_per_color} x {len(ed.colors)} = {ed.total_blocks}",
    )
    require(ed.hand_size >= 1, f"{where}: hand size must be positive")
    require(
        ed.total_cards >= 4 * ed.hand_size + ed.hand_size,
        f"{where}: {ed.total_cards} cards cannot deal {ed.hand_size} to 4 players and keep a draw pile",
    )
    require(1 <= ed.two_player.start_phase <= ed.phases, f"{where}: two-player start phase out of range")
    extra = ed.two_player.extra_two_towers_on
    for color in extra:
        require(color in ed.colors, f"{where}: two-player extra tower on unknown colour {color!r}")
    ones = Counter(ed.color_at(p) for p in ed.marked_spaces(1))
    for color, need in Counter(extra).items():
        require(
            ones[color] >= need,
            f"{where}: two-player set-up needs {need} one-mark {color} spaces for 2-towers, "
            f"the board has {ones[color]}",
        )
    neutral_spaces = sum(ones.values()) - len(extra)
    neutral_figures = (len(ed.player_colors) - 2) * ed.figures_per_player
    require(
        neutral_spaces == neutral_figures,
        f"{where}: two-player set-up puts {neutral_figures} neutral figures on the remaining "
        f"one-mark spaces, but there are {neutral_spaces}",
    )
    two_player_blocks = marked - sum(ones.values()) + 2 * len(extra)
    expected = ed.total_blocks - ed.two_player.blocks_removed_per_color * len(ed.colors)
    require(
        two_player_blocks == expected,
        f"{where}: the two-player towers need {two_player_blocks} blocks but "
        f"{expected} remain after removing {ed.two_player.blocks_removed_per_color} per colour",
    )
