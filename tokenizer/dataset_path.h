// Where a `--dataset` argument points: a dataset folder (index.json and shards), a dataset file,
// or a folder holding a single-file dataset.h5 (made before shards existed): then that file.
#pragma once

#include <string>

namespace mixgpt {

std::string resolve_dataset_path(const std::string& file_or_directory);

}  // namespace mixgpt
