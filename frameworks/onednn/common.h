// What every kernel file of the oneDNN backend includes: its memory
// descriptors (memory.h), plans and their cache (plan.h), the Kernel base
// and registration (kernel.h), and its settings.
#pragma once

#include "frameworks/onednn/kernel.h"
#include "frameworks/onednn/memory.h"
#include "frameworks/onednn/plan.h"
#include "frameworks/onednn/settings.h"
