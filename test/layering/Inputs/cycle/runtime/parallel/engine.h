#include "optim/optimizer.h"
#include "train/optimizer.h"
