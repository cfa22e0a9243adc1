"""Two drafters' trees under one shared root (merge_trees -> MergedTree): the index maps, each
node's source, and an ordinary tree for the layouts and the verifier."""

from ._specplan import MergedTree, merge_trees

__all__ = ["MergedTree", "merge_trees"]
