class Stateful:
    """Double: the protocol of state_dict / load_state_dict."""
