// Where a `--dataset` argument points: a dataset file, or the directory `mixgpt prepare` wrote
// (holding dataset.h5).
#pragma once

#include <string>

namespace mixgpt {

std::string resolve_dataset_path(const std::string& file_or_directory);

}  // namespace mixgpt
