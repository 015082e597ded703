"""Double: torch.tensor gives a list; torch.long is a name."""
long = "torch.long"


def tensor(data, dtype=None):
    assert dtype == long, dtype
    return list(data)
