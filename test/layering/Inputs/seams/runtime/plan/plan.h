#include "plan_format/format.h"
#include "driver/options.h"
