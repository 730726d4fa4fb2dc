#include "core/build_info.h"

#ifndef MIXGPT_GIT_COMMIT
#define MIXGPT_GIT_COMMIT "unknown"
#endif

namespace mixgpt {

const char* build_commit() { return MIXGPT_GIT_COMMIT; }

}  // namespace mixgpt
