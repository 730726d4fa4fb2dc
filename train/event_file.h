// A TensorBoard event file being written: `<directory>/events.out.tfevents.<seconds since the
// epoch, 10 digits>.<host>.<pid>.<n>` (n counts the event files this process opened, so a second
// run in the same process and second gets a file of its own; TensorBoard reads every file of a
// folder whose name holds "tfevents", in name order, as one run). It starts with the
// file_version record (train/event_records.h); records are buffered and reach the disk on
// flush(), when 30 s have passed since the last flush, and when the file is closed.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace mixgpt {

class EventFile {
public:
    // Creates `directory` (and its parents) and a new event file in it, never replacing one; throws
    // Error "tensorboard: <path>: <reason>" when either cannot be made.
    explicit EventFile(const std::string& directory);
    // Flushes and closes; a failure then is logged as a warning (a destructor cannot throw).
    ~EventFile();
    EventFile(const EventFile&) = delete;
    EventFile& operator=(const EventFile&) = delete;

    // One event (a serialized tensorboard.Event) as one record; throws Error naming the file when
    // writing or a due flush fails.
    void write(const std::string& event);
    void flush();
    const std::string& path() const { return path_; }

private:
    std::string path_;
    std::FILE* file_ = nullptr;
    std::chrono::steady_clock::time_point last_flush_;
};

// Throws Error "tensorboard: <directory>: <reason>" unless `directory` is a writable folder, or the
// nearest of its ancestors that exists is one (so that EventFile can create it); creates nothing.
void require_event_folder_writable(const std::string& directory);

// The wall-clock time as TensorBoard's events carry it: seconds since the epoch.
double event_wall_time();

}  // namespace mixgpt
