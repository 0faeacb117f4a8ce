"""Per-pose index of the Blox recogniser's scoring (:mod:`vision.blox`): a frame's
probe costs in one table, and the sums per (cell, hypothesis, group) as segment sums.

A hypothesis's cost is a sum over *entries* ((probe, hypothesis) pairs with a label,
:mod:`vision._blox_geometry`) of the cost of the entry's probe against its source's
candidate colours, times the entry's weight, over the probes that are visible. Which
entry reads which probe with which source and weight depends only on the pose, so it
is indexed once per pose:

* the *table* (5, rows) float32 a frame fills: one block of rows per source, a row for
  every probe that some entry reads with that source, holding the weight and the costs
  of the 4 candidate colours (a source with one candidate colour fills only the first).
  (Rows run along the last axis: numpy's loops then run over entries, not over four
  colours.) Side probes read at the weak weight (``WEAK_SIDE_WEIGHT``) have a block of
  their own, the side block times that weight, so no entry needs a multiplication; side
  probes near a level's edge, scored per pair of levels, count their weight in their
  group through a block of zero costs;
* the entries scored per group, sorted by group, each naming its table row: a frame's
  group sums (and the visible weight per group) are one gather and one
  ``np.add.reduceat``; the groups of sources with one candidate colour (the space, the
  chip, the table, nothing known) read only the weight and that cost;
* the pair entries, sorted by pair of levels, likewise (16 costs per entry).

A probe that is not visible adds nothing: the table's rows are masked (costs and weight
to zero) instead of the entries being filtered, so the index stays fixed per pose and
only the table changes from frame to frame; rescoring a few cells reads their runs. A
probe may also be partly visible (a weight below 1: a nearer piece may cover it,
depending on how that piece sits): an entry then counts with the lower of its own
weight and the probe's, so the rows already read at the weak weight (the weak side
block, the pairs) are masked only where the probe is not visible at all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vision._blox_geometry import (ALT_DOWN, ALT_UP, BEHIND, BLK_SIDE, CHIP, G_CHIP, G_LEVEL0, G_OWN, G_UNKNOWN, N_GTYPES,
                                   N_HYP, N_SRC, OWN, OWN_BODY, OWN_EDGE, TABLE, UNKNOWN, WEAK_SIDE_WEIGHT,
                                   BloxGeometry)

#: table blocks beyond the sources: weak side probes, and the pair entries' weights
WEAK, PAIR_COUNT = N_SRC, N_SRC + 1
N_BLOCKS = N_SRC + 2
#: sources with one candidate colour, and the groups that read only them
SINGLE_SOURCES = (UNKNOWN, OWN, CHIP, OWN_BODY, TABLE, OWN_EDGE, BEHIND)
SINGLE_GROUPS = (G_UNKNOWN, G_OWN, G_CHIP)


def _runs(starts: np.ndarray, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the runs ``starts[k]:starts[k + 1]`` of ``cells``, concatenated, and
    each run's length."""
    lo, hi = starts[cells], starts[cells + 1]
    lens = hi - lo
    first = np.cumsum(lens) - lens
    return np.repeat(lo - first, lens) + np.arange(int(lens.sum())), lens


@dataclass
class _Segments:
    """Entries sorted by their output bin, each reading one table row."""

    row: np.ndarray  # (E,) table row of each entry
    start: np.ndarray  # (B,) where each bin's run starts
    bin: np.ndarray  # (B,) the bin of each run
    cell_entries: np.ndarray  # (cells + 1,) where each cell's entries start
    cell_runs: np.ndarray  # (cells + 1,) where each cell's runs start

    @staticmethod
    def build(row: np.ndarray, bins: np.ndarray, cell: np.ndarray, n_cells: int) -> tuple["_Segments", np.ndarray]:
        """The segments, and the order that sorted the entries (stable: an entry's
        place within its bin is kept)."""
        order = np.argsort(bins, kind="stable")  # bins are numbered cell by cell
        row, bins, cell = row[order], bins[order], cell[order]
        start = np.flatnonzero(np.r_[True, bins[1:] != bins[:-1]]) if len(bins) else np.zeros(0, np.int64)
        return _Segments(row.astype(np.int64), start, bins[start],
                         np.searchsorted(cell, np.arange(n_cells + 1)),
                         np.searchsorted(cell[start], np.arange(n_cells + 1))), order

    def select(self, cells: np.ndarray | None) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """(entry positions, run starts within them, bins) of ``cells``; every entry
        (positions None) when ``cells`` is None."""
        if cells is None:
            return None, self.start, self.bin
        ent, n_ent = _runs(self.cell_entries, cells)
        runs, n_runs = _runs(self.cell_runs, cells)
        # A run's start, moved from the full list to the concatenation of the cells' entries.
        shift = np.repeat(self.cell_entries[cells] - (np.cumsum(n_ent) - n_ent), n_runs)
        return ent, self.start[runs] - shift, self.bin[runs]


@dataclass
class ScoreIndex:
    """What a frame's scoring reads, per pose (see the module docstring)."""

    n_cells: int
    blocks: list[slice]  # table rows of each source, then WEAK and PAIR_COUNT
    row_probe: np.ndarray  # (R,) probe of each table row
    template: np.ndarray  # (5, R) float32: the rows' weights, zero costs
    singles: _Segments  # entries of the groups of one candidate colour (bins: e_group)
    groups: _Segments  # entries of the other groups (bins: e_group)
    pairs: _Segments  # pair entries (bins: (cell * N_HYP + hypothesis) * 4 + pair)
    pair_w: np.ndarray  # (E3,) float32 weight of each pair entry (sorted like ``pairs``)
    pair_upper: np.ndarray  # (E3,) bool: the entry's own level is its pair's upper one
    row_weak: np.ndarray  # (R,) bool: the row is read at the weak weight (WEAK and PAIR_COUNT blocks)

    @property
    def size(self) -> int:
        return self.n_cells * N_HYP * N_GTYPES

    @property
    def pair_size(self) -> int:
        return self.n_cells * N_HYP * 4

    def row_visibility(self, visible: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """What the table's ``rows`` (all by default) are multiplied by, from the probes'
        ``visible`` weights (1 seen, 0 not, between: partly): an entry counts with the
        lower of its weight and its probe's, and the weak rows' weight is already at most
        any partial visibility (``vision.blox.MAYBE_HIDDEN_WEIGHT``)."""
        v = np.asarray(visible, np.float32)[self.row_probe if rows is None else self.row_probe[rows]]
        weak = self.row_weak if rows is None else self.row_weak[rows]
        return np.where(weak, np.ceil(v), v)

    def new_table(self) -> np.ndarray:
        return self.template.copy()

    def fill(self, table: np.ndarray, src: int, costs: np.ndarray | float) -> None:
        """Write the costs of source ``src``'s probes: a value or (rows,) for a source with
        one candidate colour, (4, rows) for the others; the side costs fill the weak
        block too."""
        block = table[1:2 if src in SINGLE_SOURCES else 5, self.blocks[src]]
        block[...] = np.asarray(costs, np.float32)
        if src == BLK_SIDE:
            table[1:, self.blocks[WEAK]] = block * np.float32(WEAK_SIDE_WEIGHT)

    def sums(self, table: np.ndarray, visible: np.ndarray, penalty: float, cells: np.ndarray | None = None,
             prev: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Group sums S (size, 4), visible weights (size,) and pair sums (pair_size, 4, 4
        lower colour, upper colour) of a cost ``table`` over the ``visible`` probes. A
        pair entry costs, for colours (a, b) of its levels, the lower of its own level's
        colour and the neighbour's plus ``penalty``, times its weight. With ``cells``
        (and the previous result ``prev``) only their bins are recomputed."""
        if prev is None:
            cells = None
            S, cnt, P = np.zeros((self.size, 4)), np.zeros(self.size), np.zeros((self.pair_size, 16))
            # Every row is read: mask the table once (unless every probe is visible, as
            # on most frames without a hand).
            all_visible = bool(np.all(visible == 1))
            masked = table if all_visible else table * self.row_visibility(visible)
        else:
            all_visible = False
            S, cnt, P = prev[0].copy(), prev[1].copy(), prev[2].reshape(self.pair_size, 16).copy()
        for segs, width in ((self.singles, 2), (self.groups, 5)):
            ent, start, bins = segs.select(cells)
            rows = segs.row if ent is None else segs.row[ent]
            if len(rows):
                if prev is None:
                    vals = np.take(masked[:width], rows, axis=1)
                else:
                    vals = np.take(table[:width], rows, axis=1) * self.row_visibility(visible, rows)
                sums = np.add.reduceat(vals, start, axis=1, dtype=np.float64)
                cnt[bins] = sums[0]
                S[bins] = sums[1:].T  # a source of one candidate colour: its cost for all four
        ent, start, bins = self.pairs.select(cells)
        rows, w, upper = (self.pairs.row, self.pair_w, self.pair_upper) if ent is None else (
            self.pairs.row[ent], self.pair_w[ent], self.pair_upper[ent])
        if len(rows):
            # The pair entries read the side rows at their own (weak) weight: masked only
            # where their probe is not visible at all.
            q = np.take(table[1:], rows, axis=1)
            if not all_visible:
                q *= np.ceil(np.asarray(visible, np.float32)[self.row_probe[rows]])
            own_other = np.minimum(q[:, None, :], q[None, :, :] + np.float32(penalty)) * w  # [own, other]
            lo_hi = np.where(upper, own_other.transpose(1, 0, 2), own_other)  # [lower, upper]
            P[bins] = np.add.reduceat(lo_hi.reshape(16, -1), start, axis=1, dtype=np.float64).T
        return S, cnt, P.reshape(self.pair_size, 4, 4)


def build(g: BloxGeometry, n_cells: int, src_probes: list[np.ndarray]) -> ScoreIndex:
    """The scoring index of pose geometry ``g`` (``src_probes``: per source, the sorted
    probes some entry reads with it)."""
    probes = list(src_probes) + [src_probes[BLK_SIDE], src_probes[BLK_SIDE]]
    sizes = np.array([len(p) for p in probes])
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    blocks = [slice(int(offsets[b]), int(offsets[b + 1])) for b in range(N_BLOCKS)]
    weights = np.ones(int(offsets[-1]), np.float32)
    weights[blocks[WEAK]] = WEAK_SIDE_WEIGHT
    weights[blocks[PAIR_COUNT]] = WEAK_SIDE_WEIGHT
    template = np.zeros((5, len(weights)), np.float32)
    template[0] = weights
    src = g.e_src.astype(np.int64)
    weak = g.e_w < 1.0
    if not np.all(src[weak] == BLK_SIDE) or not np.allclose(g.e_w[weak], WEAK_SIDE_WEIGHT):
        raise ValueError("only side probes are weighted, at WEAK_SIDE_WEIGHT")
    pair = (g.e_alt == ALT_UP) | (g.e_alt == ALT_DOWN)
    # Each entry's position among its source's probes.
    pos = np.empty(len(src), np.int64)
    for k in range(N_SRC):
        m = src == k
        pos[m] = np.searchsorted(src_probes[k], g.e_p[m])
    block = np.where(pair, PAIR_COUNT, np.where(weak, WEAK, src))
    row = offsets[block] + pos
    e_cell = g.e_group // (N_HYP * N_GTYPES)
    e_hyp = (g.e_group // N_GTYPES) % N_HYP
    single = np.isin(g.e_group % N_GTYPES, SINGLE_GROUPS)
    if not np.array_equal(single, np.isin(src, SINGLE_SOURCES)):
        raise ValueError("the groups of one candidate colour read the sources of one candidate colour")
    e_group = g.e_group.astype(np.int64)
    singles, _ = _Segments.build(row[single], e_group[single], e_cell[single], n_cells)
    groups, _ = _Segments.build(row[~single], e_group[~single], e_cell[~single], n_cells)
    # Pairs of adjacent levels (level L and L + 1: pair L - 1) of each (cell, hypothesis).
    p = np.nonzero(pair)[0]
    level = (g.e_group[p] % N_GTYPES).astype(np.int64) - G_LEVEL0
    upper = g.e_alt[p] == ALT_DOWN  # the entry's level is the pair's upper one
    pair_bin = (e_cell[p].astype(np.int64) * N_HYP + e_hyp[p]) * 4 + np.where(upper, level - 1, level).clip(0, 3)
    # The pair entries read the side costs themselves (their weight is applied per pair).
    pairs, order = _Segments.build(offsets[BLK_SIDE] + pos[p], pair_bin, e_cell[p], n_cells)
    row_weak = np.zeros(len(weights), bool)
    row_weak[blocks[WEAK]] = row_weak[blocks[PAIR_COUNT]] = True
    return ScoreIndex(n_cells, blocks, np.concatenate(probes).astype(np.int64), template, singles, groups, pairs,
                      g.e_w[p][order].astype(np.float32), upper[order], row_weak)
