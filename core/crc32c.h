// CRC-32C (Castagnoli: reflected polynomial 0x82F63B78, initial and final value 0xFFFFFFFF), as
// iSCSI (RFC 3720), ext4 and TFRecord files use it, and TFRecord's mask of a stored CRC. A table
// of 256 entries, a byte at a time: the records it checks are small.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mixgpt {

uint32_t crc32c(const void* data, size_t bytes);

// ((crc >> 15) | (crc << 17)) + 0xa282ead8: how TFRecord (and LevelDB) store a CRC, so that the
// CRC of data holding CRCs is not degenerate.
uint32_t mask_crc32c(uint32_t crc);

}  // namespace mixgpt
