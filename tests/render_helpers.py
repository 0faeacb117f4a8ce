"""Hand-placed Blox scenes for rendering tests: a camera over the board's centre and a
state with the given pieces."""

from __future__ import annotations

import copy
import math

import numpy as np

from calibration.camera import default_intrinsics
from calibration.kit import load_kit
from calibration.render import scene as sc
from calibration.render.states import empty_state
from calibration.render.view import look_at

KIT = load_kit()
S = KIT.blox.space_mm


def centred_setup(tilt_deg: float, height_mm: float = 700.0) -> sc.SetUp:
    """A 640x360 cm3 camera looking at the board's centre space (4, 4), tilted toward the
    far edge (so it stands over the near side)."""
    centre = np.array([4.5 * S, 4.5 * S, 0.0])
    pos = centre + np.array([0.0, height_mm * math.tan(math.radians(tilt_deg)), -height_mm])
    R, t = look_at(pos, centre)
    return sc.SetUp(KIT, "blox", default_intrinsics("cm3", 640, 360), "cm3", R, t, height_mm, tilt_deg, "oak", {})


def blox_state(cells: dict[tuple[int, int], dict]) -> dict:
    """An empty Blox board with ``cells`` ((row, col) -> cell) placed on it."""
    state = empty_state(KIT, "blox")
    for (r, c), cell in cells.items():
        state["cells"][r][c] = copy.deepcopy(cell)
    return state
