"""The ancestor matrix of a token tree, checked by hand, and the tree mask built from it."""
import numpy as np
import pytest
import torch

from csd_lib.engine.tree import ancestors, tree_mask

# root -> 0 -> 1 -> 3; 0 -> 2; root -> 4
PARENTS = [-1, 0, 0, 1, -1]


def test_ancestors_by_hand():
    want = np.array([[1, 0, 0, 0, 0],
                     [1, 1, 0, 0, 0],
                     [1, 0, 1, 0, 0],
                     [1, 1, 0, 1, 0],
                     [0, 0, 0, 0, 1]], dtype=bool)
    assert (ancestors(PARENTS) == want).all()


def test_the_mask_lets_each_node_see_exactly_its_ancestors():
    n_lin, n_cached = 2, 3
    mask, pos = tree_mask(PARENTS, n_lin, n_cached, torch.float32, "cpu")
    seen = (mask[0, 0] == 0).numpy()                       # (T, n_cached + T)
    assert (seen[n_lin:, n_cached + n_lin:] == ancestors(PARENTS)).all()
    assert seen[n_lin:, :n_cached + n_lin].all()           # every node sees the context
    assert pos[0].tolist() == [3, 4, 5, 6, 6, 7, 5]        # depth 1 sits right after the last fed token


def test_a_parent_after_its_child_is_refused():
    with pytest.raises(ValueError, match="earlier node"):
        ancestors([-1, 2, 0])
