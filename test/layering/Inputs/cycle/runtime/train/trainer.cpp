#include "parallel/engine.h"
#include "train/trainer.h"
