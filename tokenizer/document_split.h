// Which split a document goes to: a pure function of (seed, document index),
// so the split is deterministic, needs no pass over the corpus and does not
// depend on how documents are batched or encoded.
//
//   u = (splitmix64(seed ^ splitmix64(document)) >> 11) * 2^-53     (uniform in [0, 1))
//   the document is in the validation split when u < val_fraction
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
