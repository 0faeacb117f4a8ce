"""Bloxx! engine benchmark: placements enumerated per second on a half-full sheet.

Run: ``.venv/bin/python bench/bloxx_engine.py`` (writes bench/results/bloxx_engine.json).

The half-full sheet comes from a seeded solo game stopped once at least 35 of the 70
squares are filled. For each of the twelve faces every distinct placement
(orientation x position, R-BLOXX-2) is tested against the placement rules; the figures
count the legal placements produced and the candidate placements examined.
Also timed: ``legal_actions()`` as Place objects, table-mode judging, random games.
"""

from __future__ import annotations

import json
import platform
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.bloxx import BloxxGame, BloxxState, ChooseDie, Roll, judge_sheet_change, load_edition

SEED = 7
TARGET_FILLED = 35
MIN_SECONDS = 1.0


def half_full_state(edition) -> BloxxState:
    rng = random.Random(SEED)
    game = BloxxGame.create(1, edition)
    while True:
        state = game.new_initial_state()
        while not state.is_terminal():
            if 70 - state.sheets[0].empty.bit_count() >= TARGET_FILLED and state.roll is None:
                return state
            state.apply_action(rng.choice(list(state.legal_actions())))


def timed(fn) -> tuple[int, float, int]:
    """Run ``fn`` (returning a count) repeatedly for at least MIN_SECONDS."""
    reps, count = 0, 0
    start = time.perf_counter()
    while True:
        count += fn()
        reps += 1
        elapsed = time.perf_counter() - start
        if elapsed >= MIN_SECONDS:
            return reps, elapsed, count


def main() -> None:
    edition = load_edition()
    faces = [f.name for d in edition.dice for f in d.faces]
    state = half_full_state(edition)
    filled = 70 - state.sheets[0].empty.bit_count()
    candidates = sum(len(edition.placements(f)) for f in faces)
    legal_per_sweep = sum(sum(1 for _ in state.fitting(0, f)) for f in faces)

    def sweep() -> int:
        return sum(sum(1 for _ in state.fitting(0, f)) for f in faces)

    reps, secs, legal = timed(sweep)

    # legal_actions() yielding Place objects, for every roll combination.
    rolled = []
    for w in edition.dice[0].faces:
        for b in edition.dice[1].faces:
            s = state.clone()
            s.apply_action(Roll((w.name, b.name)))
            for die in (edition.dice[0].name, edition.dice[1].name):
                if s.can_place(0, die):
                    t = s.clone()
                    t.apply_action(ChooseDie(0, die))
                    rolled.append(t)

    def actions() -> int:
        return sum(sum(1 for _ in t.legal_actions()) for t in rolled)

    a_reps, a_secs, a_count = timed(actions)

    # Table mode: judge every legal placement of one roll from the sheet alone.
    judge_state = state.clone()
    judge_state.apply_action(Roll(("w3", "b3")))
    afters = []
    for die in ("white", "black"):
        for a in judge_state.placements(0, die):
            t = judge_state.clone()
            t.apply_action(a)
            afters.append(t.sheets[0].rows())

    def judge() -> int:
        for rows in afters:
            judge_sheet_change(judge_state, 0, rows)
        return len(afters)

    j_reps, j_secs, j_count = timed(judge)

    # Whole random games, 4 players.
    rng = random.Random(SEED)
    game = BloxxGame.create(4, edition)
    g_count, g_actions = 0, 0
    start = time.perf_counter()
    while time.perf_counter() - start < MIN_SECONDS:
        s = game.new_initial_state()
        while not s.is_terminal():
            s.apply_action(rng.choice(list(s.legal_actions())))
            g_actions += 1
        g_count += 1
    g_secs = time.perf_counter() - start

    results = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "sheet_filled_squares": filled,
        "sheet": state.sheets[0].rows(),
        "candidate_placements_per_sweep": candidates,
        "legal_placements_per_sweep": legal_per_sweep,
        "sweeps_per_s": round(reps / secs, 1),
        "placements_enumerated_per_s": round(legal / secs),
        "candidates_checked_per_s": round(reps * candidates / secs),
        "legal_actions_place_objects_per_s": round(a_count / a_secs),
        "table_mode_judgements_per_s": round(j_count / j_secs, 1),
        "random_4p_games_per_s": round(g_count / g_secs, 2),
        "random_4p_actions_per_s": round(g_actions / g_secs),
    }
    print("Bloxx! engine benchmark (half-full sheet, %d/70 squares filled)" % filled)
    print("\n".join("  " + row for row in results["sheet"]))
    for key, value in results.items():
        if key != "sheet":
            print(f"{key}: {value}")
    out = Path(__file__).resolve().parent / "results" / "bloxx_engine.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out.relative_to(Path(__file__).resolve().parents[1])}")


if __name__ == "__main__":
    main()
