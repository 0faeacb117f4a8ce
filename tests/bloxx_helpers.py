"""Bloxx! test helpers: a phone photo of a sheet holding a legal first placement."""

from __future__ import annotations

import json

import cv2

from engine.bloxx import BloxxGame, Roll
from service_helpers import FIXTURES

FIRST_ROLL = FIXTURES / "bloxx" / "first-roll"


def legal_first_placement_photo(player: str, seed: int = 4711) -> tuple[list[str], bytes]:
    """The sheet rows of ``player``'s first legal white placement after first-roll's roll,
    and a JPEG photo of that paper sheet (rendered with a webcam's lens and neutral light)."""
    from calibration.kit import load_kit
    from calibration.render import bloxx as rb
    from calibration.render import scene as sc

    meta = json.loads((FIRST_ROLL / "meta.json").read_text())
    game = BloxxGame.create(meta["players"])
    state = game.new_initial_state()
    state.apply_action(Roll(tuple(meta["roll"][d.name] for d in game.edition.dice)))
    p = meta["players"].index(player)
    state.apply_action(next(state.placements(p, "white")))
    rows = state.sheets[p].rows()
    kit = load_kit()
    setup = rb.bloxx_setup(kit, seed, model="webcam", size=(1280, 720))
    r = rb.render_sheet_photo(setup, game.edition, rows, None, sc.sample_conditions(seed, "neutral", kit=kit), seed)
    ok, data = cv2.imencode(".jpg", r.image, [cv2.IMWRITE_JPEG_QUALITY, 90])
    assert ok
    return rows, data.tobytes()
