#include "check/job_spec.h"
