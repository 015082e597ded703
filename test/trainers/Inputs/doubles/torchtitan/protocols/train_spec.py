"""Double: TrainSpec's fields as in torchtitan 0.2.2; registrations are recorded."""
from dataclasses import dataclass

registered = {}


@dataclass
class TrainSpec:
    model_cls: object
    model_args: object
    parallelize_fn: object
    pipelining_fn: object
    build_optimizers_fn: object
    build_lr_schedulers_fn: object
    build_dataloader_fn: object
    build_tokenizer_fn: object
    build_loss_fn: object
    build_validator_fn: object = None
    build_metrics_processor_fn: object = None
    state_dict_adapter: object = None


def register_train_spec(name, train_spec):
    if name in registered:
        raise ValueError(f"TrainSpec {name} is already registered.")
    registered[name] = train_spec
