#include "driver/options.h"
#include "plan_format/format.h"
