// The bytes of TensorBoard's event files: TFRecord framing around `tensorboard.Event` protocol
// buffers (tensorboard/compat/proto/event.proto, summary.proto; the subset written here is
// scripts/tensorboard_proto/). Encoded by hand, as protobuf serializes them (fields in number
// order, proto3 defaults left out), because only these fields are ever written (README,
// "Dependencies and why"):
//
//   Event       wall_time = 1 (double), step = 2 (int64), file_version = 3 (string),
//               summary = 5 (Summary), session_log = 7 (SessionLog)
//   Summary     value = 1 (repeated Value)
//   Value       tag = 1 (string), simple_value = 2 (float), histo = 5 (HistogramProto)
//   HistogramProto  min = 1, max = 2, num = 3, sum = 4, sum_squares = 5 (double each),
//                   bucket_limit = 6, bucket = 7 (repeated double, packed)
//   SessionLog  status = 1 (enum; START = 1)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mixgpt {

struct TensorBoardScalar {
    std::string tag;  // "train/loss": TensorBoard groups the charts by the part before the first '/'
    float value = 0;
};

// A histogram as TensorBoard's HistogramProto holds one: bucket i counts the values in
// [bucket_limit[i - 1], bucket_limit[i]), the first from min.
struct TensorBoardHistogram {
    std::string tag;
    double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
    std::vector<double> bucket_limit, bucket;
};

// One TFRecord: the data's length (uint64, little-endian), the masked CRC-32C of those 8 bytes, the
// data, the masked CRC-32C of the data (core/crc32c.h), the CRCs little-endian.
std::string frame_record(const std::string& data);

// Event{wall_time, file_version: "brain.Event:2"}: the first record of every event file; version 2
// tells TensorBoard to drop, on a SessionLog START at step s, the events of step s and later
// already read (what a restarted run redoes).
std::string file_version_event(double wall_time);

// Event{wall_time, step, session_log: {status: START}}.
std::string session_start_event(double wall_time, int64_t step);

// Event{wall_time, step, summary: {value: [{tag, simple_value} for each scalar, then {tag, histo}
// for each histogram]}}.
std::string scalars_event(double wall_time, int64_t step, const std::vector<TensorBoardScalar>& scalars,
                          const std::vector<TensorBoardHistogram>& histograms = {});

}  // namespace mixgpt
