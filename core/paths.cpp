#include "core/paths.h"

namespace mixgpt {

namespace fs = std::filesystem;

fs::path resolved_path(const std::string& path) {
    std::error_code error;
    const fs::path absolute = fs::absolute(path, error);
    const fs::path canonical = fs::weakly_canonical(absolute, error);
    return error ? absolute.lexically_normal() : canonical;
}

bool path_lies_within(const std::string& inner, const std::string& outer) {
    const fs::path inside = resolved_path(inner), container = resolved_path(outer);
    auto i = inside.begin();
    for (auto o = container.begin(); o != container.end(); ++o, ++i) {
        if (o->empty()) continue;  // a trailing separator
        if (i == inside.end() || *i != *o) return false;
    }
    return true;
}

std::string without_trailing_separator(const std::string& path) {
    fs::path normal = fs::path(path).lexically_normal();
    if (!normal.has_filename() && normal.has_parent_path()) normal = normal.parent_path();
    return normal.string();
}

}  // namespace mixgpt
