// One family of error checks for every library mixgpt calls.
//
// Library code throws mixgpt::Error; only main() turns it into a message and an
// exit status. Each library gets a thin macro built on MIXGPT_CHECK_GEN, which
// evaluates the call once, asks a predicate whether the status means success,
// and otherwise throws with file, line, the call's text and the library's own
// message for that status.
#pragma once

#include <stdexcept>
#include <string>

namespace mixgpt {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Throws Error("<library> error at <file>:<line>: <call> failed: <message>").
[[noreturn]] void throw_check_failure(const char* library, const char* call, const char* file, int line,
                                      const std::string& message);

}  // namespace mixgpt

// status_expr is evaluated once; is_ok(status) decides success; message_of(status)
// gives the library's text for a failure.
#define MIXGPT_CHECK_GEN(status_expr, library, is_ok, message_of)                    \
    do {                                                                             \
        auto mixgpt_status_ = (status_expr);                                         \
        if (!(is_ok(mixgpt_status_)))                                                \
            ::mixgpt::throw_check_failure(library, #status_expr, __FILE__, __LINE__, \
                                          message_of(mixgpt_status_));               \
    } while (0)

// A plain precondition check for library code: throws Error with the message.
#define MIXGPT_REQUIRE(condition, message)                \
    do {                                                  \
        if (!(condition)) throw ::mixgpt::Error(message); \
    } while (0)
