// Which split a document goes to: a pure function of (seed, document index,
// validation fraction), so the split is deterministic, needs no pass over the
// corpus, does not depend on how documents are batched or encoded, and
// continues the same way when documents are appended.
//
// Stratified, so that every stretch of the corpus (every shard) contributes
// its share: documents form blocks of consecutive indices,
//   block(d) = floor(d * f + c),   c = (splitmix64(seed) >> 11) * 2^-53   (in [0, 1)),
// each of floor(1/f) or ceil(1/f) documents, and exactly one document of each
// block is in the validation split: the one at position
//   splitmix64(seed ^ splitmix64(block)) mod (documents in the block)
// within it. So any 2 * ceil(1/f) consecutive documents hold a validation
// document, and the first D documents hold D * f of them, give or take one.
// f = 0: no validation split.
//
// splitmix64 is Steele, Lea and Flood's mixer (as in java.util.SplittableRandom):
//   z += 0x9e3779b97f4a7c15; z = (z ^ z >> 30) * 0xbf58476d1ce4e5b9;
//   z = (z ^ z >> 27) * 0x94d049bb133111eb; return z ^ z >> 31.
#pragma once

#include <cstdint>

#include "tokenizer/dataset_writer.h"

namespace mixgpt {

uint64_t splitmix64(uint64_t value);
Split split_of_document(uint64_t seed, int64_t document, double val_fraction);

}  // namespace mixgpt
