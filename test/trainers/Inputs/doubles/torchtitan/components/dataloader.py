class ParallelAwareDataloader:
    """Double: batches `batch_size` consecutive items of the dataset, as StatefulDataLoader does."""

    def __init__(self, dataset, dp_rank, dp_world_size, **kwargs):
        self.dataset, self.dp_rank, self.dp_world_size, self.kwargs = dataset, dp_rank, dp_world_size, kwargs

    def __iter__(self):
        items = iter(self.dataset)
        while True:
            yield [next(items) for _ in range(self.kwargs["batch_size"])]
