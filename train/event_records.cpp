#include "train/event_records.h"

#include <cstring>

#include "core/crc32c.h"

namespace mixgpt {
namespace {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void put_varint(std::string& out, uint64_t value) {
    for (; value >= 0x80; value >>= 7) out.push_back(static_cast<char>((value & 0x7F) | 0x80));
    out.push_back(static_cast<char>(value));
}

void put_little_endian(std::string& out, uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

void put_key(std::string& out, uint32_t field, WireType type) { put_varint(out, (field << 3) | type); }

void put_bytes(std::string& out, uint32_t field, const std::string& bytes) {
    put_key(out, field, kLengthDelimited);
    put_varint(out, bytes.size());
    out += bytes;
}

// A double field, left out at 0 as proto3 does.
void put_double(std::string& out, uint32_t field, double value) {
    if (value == 0) return;
    uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof(bits));
    put_key(out, field, kFixed64);
    put_little_endian(out, bits, 8);
}

// A packed repeated double field, left out when empty.
void put_doubles(std::string& out, uint32_t field, const std::vector<double>& values) {
    if (values.empty()) return;
    std::string packed;
    for (const double value : values) {
        uint64_t bits = 0;
        std::memcpy(&bits, &value, sizeof(bits));
        put_little_endian(packed, bits, 8);
    }
    put_bytes(out, field, packed);
}

std::string histogram_proto(const TensorBoardHistogram& histogram) {
    std::string proto;
    put_double(proto, 1, histogram.min);
    put_double(proto, 2, histogram.max);
    put_double(proto, 3, histogram.num);
    put_double(proto, 4, histogram.sum);
    put_double(proto, 5, histogram.sum_squares);
    put_doubles(proto, 6, histogram.bucket_limit);
    put_doubles(proto, 7, histogram.bucket);
    return proto;
}

// Event's wall_time and step, each left out at 0 as proto3 does.
std::string event_head(double wall_time, int64_t step) {
    std::string event;
    put_double(event, 1, wall_time);
    if (step != 0) {
        put_key(event, 2, kVarint);
        put_varint(event, static_cast<uint64_t>(step));  // negative: ten bytes, as int64 is encoded
    }
    return event;
}

}  // namespace

std::string frame_record(const std::string& data) {
    std::string length;
    put_little_endian(length, data.size(), 8);
    std::string record = length;
    put_little_endian(record, mask_crc32c(crc32c(length.data(), length.size())), 4);
    record += data;
    put_little_endian(record, mask_crc32c(crc32c(data.data(), data.size())), 4);
    return record;
}

std::string file_version_event(double wall_time) {
    std::string event = event_head(wall_time, 0);
    put_bytes(event, 3, "brain.Event:2");
    return event;
}

std::string session_start_event(double wall_time, int64_t step) {
    std::string session_log;
    put_key(session_log, 1, kVarint);
    put_varint(session_log, 1);  // START
    std::string event = event_head(wall_time, step);
    put_bytes(event, 7, session_log);
    return event;
}

std::string scalars_event(double wall_time, int64_t step, const std::vector<TensorBoardScalar>& scalars,
                          const std::vector<TensorBoardHistogram>& histograms) {
    std::string summary;
    for (const TensorBoardScalar& scalar : scalars) {
        std::string value;
        put_bytes(value, 1, scalar.tag);
        uint32_t bits = 0;
        std::memcpy(&bits, &scalar.value, sizeof(bits));
        put_key(value, 2, kFixed32);
        put_little_endian(value, bits, 4);
        put_bytes(summary, 1, value);
    }
    for (const TensorBoardHistogram& histogram : histograms) {
        std::string value;
        put_bytes(value, 1, histogram.tag);
        put_bytes(value, 5, histogram_proto(histogram));
        put_bytes(summary, 1, value);
    }
    std::string event = event_head(wall_time, step);
    put_bytes(event, 5, summary);
    return event;
}

}  // namespace mixgpt
