"""The kit file: nominal sizes of table-kit.md, validation with clear errors."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from calibration.kit import KitError, kit_from_dict, load_kit


def test_bundled_kit_holds_table_kit_sizes():
    kit = load_kit()
    assert kit.markers.dictionary == "DICT_4X4_50" and kit.markers.size_mm == 40
    assert kit.markers.ids == {"far_left": 0, "far_right": 1, "near_right": 2, "near_left": 3}
    c = kit.charuco
    assert (c.squares_x, c.squares_y, c.square_mm, c.marker_mm, c.dictionary) == (7, 5, 30, 22, "DICT_5X5_100")
    assert kit.blox.spaces == 9 and kit.blox.space_mm == 38 and kit.area_mm("blox") == (342, 342)
    assert kit.blox.colors["purple"] == (150, 80, 110)
    assert kit.blox.block.footprint_mm == 28 and kit.blox.block.height_mm == 14 and kit.blox.block.max_tower == 5
    assert kit.blox.figure.base_mm == 22 and kit.blox.figure.height_mm == 32
    assert kit.blox.players["blue"] == (50, 90, 180)
    assert kit.bloxo.card_mm == 70 and kit.bloxo.shapes["green"] == "star" and kit.area_mm("bloxo") == (600, 600)
    assert kit.blockers.space_mm == 30 and kit.blockers.tile_mm == 27 and kit.blockers.colors["violet"] == (130, 70, 160)
    assert kit.blockout.sizes["large"] == (25, 25, 75) and kit.blockout.base_mm == 120
    assert kit.camera.height_mm == (500, 900) and kit.camera.tilt_deg == (0, 40)


def test_marker_geometry_follows_table_kit():
    kit = load_kit()
    m = kit.marker_corners("blox")
    # Marker 0 covers x in [-40, 0], y in [-40, 0]; its inner corner is the grid corner.
    assert np.allclose(m[0][:, :2].min(axis=0), [-40, -40]) and np.allclose(m[0][:, :2].max(axis=0), [0, 0])
    assert np.allclose(m[1][:, :2].min(axis=0), [342, -40])
    assert np.allclose(m[2][:, :2].min(axis=0), [342, 342])
    assert np.allclose(m[3][:, :2].min(axis=0), [-40, 342])
    # ArUco corner order: top-left, top-right, bottom-right, bottom-left (upright marker).
    assert np.allclose(m[0][1] - m[0][0], [40, 0, 0]) and np.allclose(m[0][3] - m[0][0], [0, 40, 0])
    assert np.allclose(kit.marker_corners("bloxo")[2][0, :2], [600, 600])


def _raw():
    return copy.deepcopy(load_kit().raw)


@pytest.mark.parametrize(
    "mutate, words",
    [
        (lambda d: d["blox"]["block"].pop("height_mm"), "blox.block.height_mm is missing"),
        (lambda d: d["blox"]["block"].__setitem__("height_mm", -3), "blox.block.height_mm must be a positive number"),
        (lambda d: d["blox"]["colors"].__setitem__("grey", [150, 150]), "blox.colors.grey must be an sRGB triple"),
        (lambda d: d["charuco"].__setitem__("marker_mm", 31), "charuco.marker_mm must be smaller than square_mm"),
        (lambda d: d["markers"]["ids"].__setitem__("near_left", 0), "markers.ids must be four different"),
        (lambda d: d["charuco"].__setitem__("dictionary", "DICT_4X4_50"), "must differ from the board markers"),
        (lambda d: d.__setitem__("version", 2), "version is not supported"),
        (lambda d: d["camera"].__setitem__("height_mm", [900, 500]), "camera.height_mm must be [low, high]"),
        (lambda d: d["blox"]["block"].__setitem__("footprint_mm", 36), "must fit in a 38 mm space"),
    ],
)
def test_invalid_kits_name_the_field(mutate, words):
    d = _raw()
    mutate(d)
    with pytest.raises(KitError) as exc:
        kit_from_dict(d, "my-kit.json")
    assert words in str(exc.value) and "my-kit.json" in str(exc.value)


def test_user_kit_file(tmp_path):
    d = _raw()
    d["blox"]["space_mm"] = 40
    d["markers"]["size_mm"] = 50
    p = tmp_path / "kit.json"
    p.write_text(json.dumps(d))
    kit = load_kit(p)
    assert kit.area_mm("blox") == (360, 360)
    assert np.allclose(kit.marker_corners("blox")[2][2, :2], [410, 410])
    assert kit.source == str(p)


def test_kit_file_errors(tmp_path):
    with pytest.raises(KitError, match="kit file not found"):
        load_kit(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(KitError, match="not valid JSON"):
        load_kit(bad)
