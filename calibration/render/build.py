"""Regenerate the committed rendered fixtures: ``python -m calibration.render.build tests/fixtures``.

Deterministic: the same seeds give the same files (up to the JPEG encoder's version).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from calibration.kit import load_kit
from calibration.render import scene as sc
from calibration.render import states as st
from calibration.render.fixtures import write_scene, write_setup

# name -> (game, camera model, set-up seed, lens frames)
SETUPS = {
    "blox/setup-cm3": ("blox", "cm3", 1001, 6),
    "blox/setup-wide": ("blox", "cm3-wide", 1002, 6),
    "bloxo/setup-webcam": ("bloxo", "webcam", 1003, 0),
    "blockers/setup-cm3": ("blockers", "cm3", 1004, 0),
    "blockout/setup-cm3": ("blockout", "cm3", 1005, 0),
}

# scene name -> (set-up, conditions preset, seed)
SCENES = {"blox/" + p: ("blox/setup-cm3", p, 1100 + i) for i, p in enumerate(sc.PRESETS)}
SCENES.update({
    "blox/wide-neutral": ("blox/setup-wide", "neutral", 1200),
    "blox/wide-everything": ("blox/setup-wide", "everything", 1201),
    "bloxo/neutral": ("bloxo/setup-webcam", "neutral", 1300),
    "bloxo/hands": ("bloxo/setup-webcam", "hands", 1301),
    "bloxo/warm-dim": ("bloxo/setup-webcam", "warm-dim", 1302),
    "blockers/neutral": ("blockers/setup-cm3", "neutral", 1400),
    "blockers/glare": ("blockers/setup-cm3", "glare", 1401),
    "blockers/hands": ("blockers/setup-cm3", "hands", 1402),
    "blockout/neutral": ("blockout/setup-cm3", "neutral", 1500),
    "blockout/one-sided": ("blockout/setup-cm3", "one-sided", 1501),
})


def build(root: Path) -> None:
    kit = load_kit()
    setups = {}
    for name, (game, model, seed, lens) in SETUPS.items():
        setup = sc.sample_setup(kit, game, seed, model=model)
        setups[name] = setup
        write_setup(setup, root / name, seed, lens_frames=lens)
        print("set-up", name)
    for name, (sname, preset, seed) in SCENES.items():
        setup = setups[sname]
        state = st.random_state(kit, setup.game, np.random.default_rng(seed))
        cond = sc.sample_conditions(seed, preset, area=kit.area_mm(setup.game), kit=kit)
        write_scene(setup, [state], [cond], [seed], root / name, setup_dir=root / sname)
        print("scene", name)


if __name__ == "__main__":
    build(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures"))
