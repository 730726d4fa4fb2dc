#include "tokenizer/unicode_classes.h"

#include <algorithm>
#include <vector>

namespace mixgpt {
namespace {

struct ClassRange {
    char32_t first, last;
    UnicodeClass unicode_class;
};

constexpr ClassRange kClassRanges[] = {
#include "tokenizer/unicode_classes_table.inc"
};

constexpr char32_t kCodePoints = 0x110000;
constexpr int kBlockBits = 8;
constexpr char32_t kBlockSize = char32_t{1} << kBlockBits;

// A two-stage table built once from the ranges: block_of[code_point >> 8] is the index of a
// 256-entry block of classes; identical blocks are stored once (about 300 of them).
struct ClassTable {
    std::vector<uint16_t> block_of;
    std::vector<UnicodeClass> blocks;

    ClassTable() {
        std::vector<UnicodeClass> all(kCodePoints, UnicodeClass::other);
        for (const ClassRange& range : kClassRanges)
            for (char32_t c = range.first; c <= range.last; ++c) all[c] = range.unicode_class;
        block_of.resize(kCodePoints / kBlockSize);
        for (char32_t block = 0; block < kCodePoints / kBlockSize; ++block) {
            const UnicodeClass* start = all.data() + block * kBlockSize;
            size_t found = blocks.size() / kBlockSize;
            for (size_t b = 0; b < blocks.size() / kBlockSize; ++b) {
                if (std::equal(start, start + kBlockSize, blocks.data() + b * kBlockSize)) {
                    found = b;
                    break;
                }
            }
            if (found == blocks.size() / kBlockSize) blocks.insert(blocks.end(), start, start + kBlockSize);
            block_of[block] = static_cast<uint16_t>(found);
        }
    }
};

const ClassTable& class_table() {
    static const ClassTable table;
    return table;
}

}  // namespace

UnicodeClass unicode_class(char32_t code_point) {
    if (code_point >= kCodePoints) return UnicodeClass::other;
    const ClassTable& table = class_table();
    return table.blocks[static_cast<size_t>(table.block_of[code_point >> kBlockBits]) * kBlockSize +
                        (code_point & (kBlockSize - 1))];
}

}  // namespace mixgpt
