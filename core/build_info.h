// What built this binary: `git describe --always --dirty` of the source tree at build time,
// passed in by the Makefile (MIXGPT_GIT_COMMIT); "unknown" outside a git checkout.
#pragma once

namespace mixgpt {

const char* build_commit();

}  // namespace mixgpt
