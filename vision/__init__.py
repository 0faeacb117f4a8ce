"""Vision: calibrated frames to observations (``../shared/design/observation.md``).

Every game's recogniser lives in ``vision/<game>.py`` and follows one interface, so
the service and ``bloxcam evaluate`` need no per-game code:

* ``Recognizer(calibration, *, stable_seconds=1.0, edition=None)``;
* ``process(frame_bgr, t, index, lores=None) -> dict``: one observation;
* ``overlay(frame_bgr, observation) -> np.ndarray``: the frame with what was read drawn;
* module function ``score(truth, observed) -> {metric: (errors, total)}``.

Shared machinery: :mod:`vision.board` (pose per frame, projection, sampling, top-down
warp), :mod:`vision.colours` (per-frame white balance and light field, CIELAB
classification against the survey), :mod:`vision.hands` (hands and arms -> occluded
cells), :mod:`vision.motion` (the stability gate), :mod:`vision.evaluate` (fixtures
against their truth).
"""

from __future__ import annotations

import importlib
from typing import Any


def recognizer_module(game: str) -> Any:
    """The module ``vision.<game>``; ValueError naming the game when there is none."""
    if not game.isidentifier():
        raise ValueError(f"unknown game {game!r}")
    try:
        return importlib.import_module(f"vision.{game}")
    except ModuleNotFoundError as exc:
        if exc.name == f"vision.{game}":
            raise ValueError(f"no recogniser for game {game!r} (expected a module vision/{game}.py)") from None
        raise


def make_recognizer(game: str, calibration: Any, **kw: Any) -> Any:
    """``vision.<game>.Recognizer(calibration, **kw)``."""
    module = recognizer_module(game)
    cls = getattr(module, "Recognizer", None)
    if cls is None:
        raise ValueError(f"vision.{game} has no Recognizer")
    return cls(calibration, **kw)
