"""The token tree figure: layout by depth, colours by drafter, the accepted path marked; the mask heatmap."""
import pytest

from csd_lib.viz.palette import level_color
from csd_lib.viz.tree import token_tree_figure, tree_mask_figure

# root -> a (0) -> b (1) -> d (3); a -> c (2); root -> e (4)
PARENTS = [-1, 0, 0, 1, -1]
LABELS = ["a", "b", "c", "d", "e"]
WHO = ["base", "small", "small", "mag", "base"]


def test_nodes_are_coloured_by_drafter_and_the_path_is_thick():
    fig = token_tree_figure(LABELS, PARENTS, WHO, accepted=[0, 1])
    nodes = {t.name: t for t in fig.data if t.mode == "markers+text"}
    assert set(nodes) == {"drafted by base", "drafted by small", "drafted by mag", "last committed token"}
    base = nodes["drafted by base"]
    assert list(base.text) == ["a", "e"] and base.marker.color == level_color("base")
    assert list(base.marker.symbol) == ["circle", "circle-open"]  # a accepted, e not
    edges = [t for t in fig.data if t.mode == "lines"]
    assert [e.line.width for e in edges] == [4, 4, 1.5, 1.5, 1.5]
    assert list(nodes["drafted by mag"].x) == [3]


@pytest.mark.parametrize("parents,err", [([-1, 1], "must be -1 .the root. or an earlier node"), ([-1], "2 labels")])
def test_a_bad_tree_is_refused(parents, err):
    with pytest.raises(ValueError, match=err):
        token_tree_figure(["x", "y"], parents, ["base", "base"], accepted=[])


def test_the_mask_heatmap_is_the_mask():
    mask = [[j == i or j == 0 for j in range(3)] for i in range(3)]
    fig = tree_mask_figure(mask, ["a", "b", "c"])
    assert [list(r) for r in fig.data[0].z] == [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 0.0, 1.0]]
    with pytest.raises(ValueError, match="3 x 3"):
        tree_mask_figure([[True]], ["a", "b", "c"])
