"""Double: the llama3 flavors' vocabularies and a train spec of named parts."""
from dataclasses import dataclass

from torchtitan.protocols.train_spec import TrainSpec


@dataclass
class TransformerModelArgs:
    vocab_size: int


llama3_args = {"debugmodel": TransformerModelArgs(2048), "8B": TransformerModelArgs(128256)}


def get_train_spec():
    return TrainSpec(model_cls="Transformer", model_args=llama3_args, parallelize_fn="parallelize_llama",
                     pipelining_fn="pipeline_llm", build_optimizers_fn="build_optimizers",
                     build_lr_schedulers_fn="build_lr_schedulers", build_dataloader_fn="build_text_dataloader",
                     build_tokenizer_fn="build_hf_tokenizer", build_loss_fn="build_cross_entropy_loss",
                     build_validator_fn="build_validator", state_dict_adapter="Llama3StateDictAdapter")
