#include "model/transformer.h"
