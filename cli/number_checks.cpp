#include "cli/number_checks.h"

#include "core/log.h"

namespace mixgpt::cli {
namespace {

CLI::Validator bounded(double bound, bool inclusive) {
    const std::string wanted = format("must be %s %g", inclusive ? ">=" : ">", bound);
    return CLI::Validator(
        [bound, inclusive, wanted](std::string& input) -> std::string {
            double value = 0;
            if (!CLI::detail::lexical_cast(input, value)) return "'" + input + "' is not a number";
            const bool fits = inclusive ? value >= bound : value > bound;
            return fits ? "" : wanted + " (got " + input + ")";
        },
        inclusive ? format("NUMBER >= %g", bound) : format("NUMBER > %g", bound));
}

}  // namespace

CLI::Validator greater_than(double bound) { return bounded(bound, false); }
CLI::Validator at_least(double bound) { return bounded(bound, true); }

}  // namespace mixgpt::cli
