// Backend: the small interface a device implements, declared in graft/core/buffer.h (the core moves
// arrays between devices). This header remains for code that includes it by its old name.
#pragma once

#include "graft/core/buffer.h"
