#include "cpu/kernels.h"
