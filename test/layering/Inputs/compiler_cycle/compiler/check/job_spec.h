#include "sema/program.h"
