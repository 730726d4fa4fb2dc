// What a path names on disk, and whether one path lies inside another: the checks that keep a
// command's outputs and clean-ups away from its inputs.
#pragma once

#include <filesystem>
#include <string>

namespace mixgpt {

// `path` made absolute, with symbolic links and ".." resolved as far as it exists.
std::filesystem::path resolved_path(const std::string& path);

// Whether `inner` is `outer` or lies inside it, both resolved.
bool path_lies_within(const std::string& inner, const std::string& outer);

// "out/" and "out" are the same folder: the path without trailing separators (and normalised).
std::string without_trailing_separator(const std::string& path);

}  // namespace mixgpt
