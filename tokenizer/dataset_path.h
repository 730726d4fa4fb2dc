// Where a `--dataset` argument points: a dataset folder (index.json and shards), a dataset file,
// or a folder holding a single-file dataset.h5 (made before shards existed): then that file.
#pragma once

#include <string>

namespace mixgpt {

std::string resolve_dataset_path(const std::string& file_or_directory);

// What tells a dataset apart from another found at the same path (a run records it, so that the
// dataset it defaults to is the one it was trained on): for a folder, the SHA-256 of its first
// shard as index.json records it (appends keep it; another corpus, tokenizer, seed or split
// changes it); for a single-file dataset, its tokenizer's SHA-256 and its split token counts.
// `path` as resolve_dataset_path gives it; throws Error when it is not a dataset.
std::string dataset_identity(const std::string& path);

}  // namespace mixgpt
