#include "train/trainer.h"
#include "parallel/engine.h"
