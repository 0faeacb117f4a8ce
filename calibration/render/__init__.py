"""Synthetic recorded scenes: a deterministic 3D renderer of the table kit.

See :mod:`calibration.render.scene` for the renderer and
:mod:`calibration.render.fixtures` for writing fixture folders.
"""

from calibration.render.scene import (
    PRESETS,
    Conditions,
    Hand,
    Rendered,
    SetUp,
    render_charuco,
    render_frame,
    random_sheet_pose,
    sample_conditions,
    sample_setup,
)

__all__ = [
    "PRESETS", "Conditions", "Hand", "Rendered", "SetUp", "render_charuco", "render_frame", "random_sheet_pose",
    "sample_conditions", "sample_setup",
]
