// What built this binary, from the header the Makefile writes (build/generated/build_stamp.h):
// mixgpt's version, `git describe --always --dirty` of the source tree ("unknown" outside a git
// checkout), the GPU architectures compiled and the build options.
#pragma once

namespace mixgpt {

const char* build_version();
const char* build_commit();
const char* build_gpu_archs();    // GPU_ARCHS, e.g. "80 90"
const char* build_options();      // e.g. "release (-O3), g++ 12.2.0"

}  // namespace mixgpt
