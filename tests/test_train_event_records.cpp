// The bytes of TensorBoard's event files (core/crc32c.h, train/event_records.h) against published
// values: CRC-32C check values (the CRC catalogue's "123456789", RFC 3720 B.4), a record and a
// masked CRC taken by TensorBoard's own tests from real TensorFlow event files
// (tensorboard/data/server/tf_record.rs and masked_crc.rs), and events derived by hand from
// protobuf's wire format. The whole path, protoc-compiled decoding included:
// test_train_tensorboard.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/crc32c.h"
#include "train/event_records.h"

namespace mixgpt {
namespace {

uint32_t crc_of(const std::string& bytes) { return crc32c(bytes.data(), bytes.size()); }

TEST(Crc32c, PublishedCheckValues) {
    EXPECT_EQ(crc_of(""), 0x00000000u);
    EXPECT_EQ(crc_of("123456789"), 0xE3069283u);
    EXPECT_EQ(crc_of(std::string(32, '\x00')), 0x8A9136AAu);
    EXPECT_EQ(crc_of(std::string(32, '\xFF')), 0x62A8AB43u);
    std::string ascending, descending;
    for (int i = 0; i < 32; ++i) {
        ascending.push_back(static_cast<char>(i));
        descending.push_back(static_cast<char>(31 - i));
    }
    EXPECT_EQ(crc_of(ascending), 0x46DD794Eu);
    EXPECT_EQ(crc_of(descending), 0x113FDB5Cu);
}

TEST(Crc32c, MaskOfARealTensorFlowRecord) {
    // Event{file_version: "CRC test, one two"} and its stored CRC, from a TensorFlow event file.
    EXPECT_EQ(mask_crc32c(crc_of(std::string("\x1a\x11" "CRC test, one two"))), 0x5794d08au);
    EXPECT_EQ(mask_crc32c(0), 0xa282ead8u);
    EXPECT_EQ(mask_crc32c(0x00008000u), 0xa282ead9u);  // rotated right by 15, plus the delta
}

TEST(EventRecords, FileVersionRecordIsTensorFlowsByteForByte) {
    // The first record of a TensorFlow 2 event file, as TensorBoard's tf_record.rs test holds it.
    const std::string wall_time_bytes("\x00\x00\x80\x38\x99\xd6\xd7\x41", 8);
    const std::string data = std::string("\x09", 1) + wall_time_bytes + "\x1a\x0d" "brain.Event:2";
    const std::string record = std::string("\x18\x00\x00\x00\x00\x00\x00\x00", 8) + "\xa3\x7f\x4b\x22" +
                               data + "\x12\x4b\x36\xab";
    double wall_time = 0;
    std::memcpy(&wall_time, wall_time_bytes.data(), sizeof(wall_time));
    EXPECT_EQ(file_version_event(wall_time), data);
    EXPECT_EQ(frame_record(data), record);
}

TEST(EventRecords, ScalarAndStartEventsFollowTheWireFormat) {
    // Event{step: 77, summary: {value: [{tag: "accuracy", simple_value: 0.99}]}}: step is field 2
    // varint (0x10), summary field 5 (0x2a), value field 1 (0x0a), tag field 1 (0x0a),
    // simple_value field 2 fixed32 (0x15), 0.99f = 0x3f7d70a4 little-endian.
    EXPECT_EQ(scalars_event(0, 77, {{"accuracy", 0.99f}}),
              std::string("\x10\x4d\x2a\x11\x0a\x0f\x0a\x08" "accuracy" "\x15\xa4\x70\x7d\x3f"));
    EXPECT_EQ(scalars_event(0, 300, {{"a", 1.f}, {"b", -2.f}}),
              std::string("\x10\xac\x02\x2a\x14"
                          "\x0a\x08\x0a\x01" "a" "\x15\x00\x00\x80\x3f"
                          "\x0a\x08\x0a\x01" "b" "\x15\x00\x00\x00\xc0", 25));
    // Event{step: 5, session_log: {status: START}}: session_log is field 7 (0x3a), status field 1.
    EXPECT_EQ(session_start_event(0, 5), std::string("\x10\x05\x3a\x02\x08\x01", 6));
    // wall_time 1.0 is field 1 fixed64 (0x09), 0x3ff0000000000000 little-endian.
    EXPECT_EQ(session_start_event(1.0, 5).substr(0, 9), std::string("\x09\x00\x00\x00\x00\x00\x00\xf0\x3f", 9));
}

}  // namespace
}  // namespace mixgpt
