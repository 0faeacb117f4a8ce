"""Calibration: the table kit, the camera lens, the board's pose and colours.

* :mod:`calibration.kit` - the kit file (``kit.json``): nominal sizes, validated.
* :mod:`calibration.camera` - intrinsics; defaults per camera model.
* :mod:`calibration.lens` - lens calibration from ChArUco frames.
* :mod:`calibration.pose` - board pose from the markers, per-frame re-check.
* :mod:`calibration.markerless` - board pose from its outline and grid.
* :mod:`calibration.survey` - colour survey in CIELAB, white balance.
* :mod:`calibration.store` - the per-table calibration file.
* :mod:`calibration.printkit` - the printable markers and lens sheet.
* :mod:`calibration.render` - the deterministic scene renderer for fixtures.
"""
