class IterableDataset:
    """Double: a dataset that is iterated."""
