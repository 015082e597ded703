#include "parallel/engine.h"
