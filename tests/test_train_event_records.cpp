// The bytes of TensorBoard's event files (core/crc32c.h, train/event_records.h) against published
// values: CRC-32C check values (the CRC catalogue's "123456789", RFC 3720 B.4), a record and a
// masked CRC taken by TensorBoard's own tests from real TensorFlow event files
// (tensorboard/data/server/tf_record.rs and masked_crc.rs), and events derived by hand from
// protobuf's wire format. The whole path, protoc-compiled decoding included:
// test_train_tensorboard.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <string>

#include "core/crc32c.h"
#include "train/event_records.h"

namespace mixgpt {
namespace {

uint32_t crc_of(const std::string& bytes) { return crc32c(bytes.data(), bytes.size()); }

std::string bytes(std::initializer_list<int> values) {
    std::string text;
    for (int value : values) text.push_back(static_cast<char>(value));
    return text;
}

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
    EXPECT_EQ(mask_crc32c(crc_of(bytes({0x1a, 0x11}) + "CRC test, one two")), 0x5794d08au);
    EXPECT_EQ(mask_crc32c(0), 0xa282ead8u);
    EXPECT_EQ(mask_crc32c(0x00008000u), 0xa282ead9u);  // rotated right by 15, plus the delta
}

TEST(EventRecords, FileVersionRecordIsTensorFlowsByteForByte) {
    // The first record of a TensorFlow 2 event file, as TensorBoard's tf_record.rs test holds it.
    const std::string wall_time_bytes = bytes({0x00, 0x00, 0x80, 0x38, 0x99, 0xd6, 0xd7, 0x41});
    const std::string data = bytes({0x09}) + wall_time_bytes + bytes({0x1a, 0x0d}) + "brain.Event:2";
    const std::string record = bytes({0x18, 0, 0, 0, 0, 0, 0, 0}) + bytes({0xa3, 0x7f, 0x4b, 0x22}) + data +
                               bytes({0x12, 0x4b, 0x36, 0xab});
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
              bytes({0x10, 0x4d, 0x2a, 0x11, 0x0a, 0x0f, 0x0a, 0x08}) + "accuracy" +
                  bytes({0x15, 0xa4, 0x70, 0x7d, 0x3f}));
    // Step 300 is a two-byte varint; two values, 1.0f and -2.0f.
    EXPECT_EQ(scalars_event(0, 300, {{"a", 1.f}, {"b", -2.f}}),
              bytes({0x10, 0xac, 0x02, 0x2a, 0x14}) + bytes({0x0a, 0x08, 0x0a, 0x01}) + "a" +
                  bytes({0x15, 0x00, 0x00, 0x80, 0x3f}) + bytes({0x0a, 0x08, 0x0a, 0x01}) + "b" +
                  bytes({0x15, 0x00, 0x00, 0x00, 0xc0}));
    // Event{step: 5, session_log: {status: START}}: session_log is field 7 (0x3a), status field 1.
    EXPECT_EQ(session_start_event(0, 5), bytes({0x10, 0x05, 0x3a, 0x02, 0x08, 0x01}));
    // A histogram: Value{tag: "h", histo: {min: 1.0, bucket_limit: [2.0], bucket: [3.0]}}: histo is
    // field 5 (0x2a, 29 bytes); min field 1 fixed64 (0x09), 1.0 = 0x3ff0000000000000; bucket_limit
    // field 6 and bucket field 7 packed (0x32, 0x3a; 8 bytes each), 2.0 = 0x4000..., 3.0 = 0x4008...;
    // max, num, sum and sum_squares are 0 and left out.
    TensorBoardHistogram histogram;
    histogram.tag = "h";
    histogram.min = 1.0;
    histogram.bucket_limit = {2.0};
    histogram.bucket = {3.0};
    EXPECT_EQ(scalars_event(0, 0, {}, {histogram}),
              bytes({0x2a, 0x24, 0x0a, 0x22, 0x0a, 0x01}) + "h" + bytes({0x2a, 0x1d}) +
                  bytes({0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}) + bytes({0x32, 0x08, 0, 0, 0, 0, 0, 0, 0x00, 0x40}) +
                  bytes({0x3a, 0x08, 0, 0, 0, 0, 0, 0, 0x08, 0x40}));
    // wall_time 1.0 is field 1 fixed64 (0x09), 0x3ff0000000000000 little-endian.
    EXPECT_EQ(session_start_event(1.0, 5).substr(0, 9),
              bytes({0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x3f}));
}

}  // namespace
}  // namespace mixgpt
