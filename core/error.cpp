#include "core/error.h"

namespace mixgpt {

void throw_check_failure(const char* library, const char* call, const char* file, int line,
                         const std::string& message) {
    throw Error(std::string(library) + " error at " + file + ":" + std::to_string(line) + ": " + call +
                " failed: " + message);
}

}  // namespace mixgpt
