// Small RAII layer over the HDF5 C API, shared by datasets, checkpoints and
// test fixtures. Every call is checked with H5_CHECK; errors name the file and
// the object. HDF5's own error printing is switched off: our exceptions say it.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mixgpt::h5 {

// Owns one hid_t and closes it with the matching H5*close.
class Handle {
public:
    using Closer = herr_t (*)(hid_t);
    Handle() = default;
    Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    Handle(Handle&& other) noexcept : id_(other.id_), closer_(other.closer_) { other.id_ = -1; }
    Handle& operator=(Handle&& other) noexcept;
    ~Handle();
    hid_t id() const { return id_; }
    // Gives up ownership without closing; returns the id.
    hid_t release();

private:
    hid_t id_ = -1;
    Closer closer_ = nullptr;
};

// Element types stored in our files.
enum class Type { u16, u32, i32, i64, f32, f64, u8 };
hid_t native_type(Type type);
size_t type_size(Type type);

// A writable file destroyed on a full disk is being abandoned (an error path): its content is
// truncated, so that its blocks are free at once (HDF5 1.10 cannot close a file whose flush failed).
class File {
public:
    // Truncates. user_block_bytes > 0 reserves that many bytes at the start for the caller's header
    // (a power of two >= 512).
    static File create(const std::string& path, size_t user_block_bytes = 0);
    static File open_read(const std::string& path);  // throws "<path>: not an HDF5 file" etc.
    // The file open as `descriptor` (which stays the caller's), named `path` in errors: it is read
    // whole even if `path` is removed or replaced meanwhile (through /proc/self/fd, Linux).
    static File open_read(int descriptor, const std::string& path);
    static File open_write(const std::string& path);

    File(File&&) noexcept = default;
    File& operator=(File&&) = delete;
    ~File();

    const std::string& path() const { return path_; }
    hid_t id() const { return handle_.id(); }
    // Flushes and closes now; throws Error naming the file ("no space left on device" when the
    // disk is full). Writers call it before they commit: a destructor cannot report a failure.
    void close();

    bool exists(const std::string& object_path) const;
    void create_group(const std::string& group_path);

    // Whole-array datasets. `shape` empty means a scalar.
    void write(const std::string& name, Type type, const void* data, const std::vector<int64_t>& shape);
    std::vector<int64_t> shape(const std::string& name) const;
    Type stored_type(const std::string& name) const;
    // Reads the whole dataset converted to `type`; throws if the element count differs.
    void read(const std::string& name, Type type, void* data, int64_t expected_count) const;
    // Reads elements [offset, offset + count) of a 1-D dataset converted to `type`.
    void read_range(const std::string& name, Type type, void* data, int64_t offset, int64_t count) const;

    // A 1-D chunked dataset that grows by appends (for streaming writes).
    void create_extendible(const std::string& name, Type type, int64_t chunk_elements);
    void append(const std::string& name, Type type, const void* data, int64_t count);

    // Attributes on the object at `object_path` ("/" for the file).
    void set_attribute(const std::string& object_path, const std::string& name, int64_t value);
    void set_attribute(const std::string& object_path, const std::string& name, double value);
    void set_attribute(const std::string& object_path, const std::string& name, const std::string& value);
    bool has_attribute(const std::string& object_path, const std::string& name) const;
    int64_t attribute_int(const std::string& object_path, const std::string& name) const;
    double attribute_double(const std::string& object_path, const std::string& name) const;
    std::string attribute_string(const std::string& object_path, const std::string& name) const;

private:
    // Opens `opened` (a path HDF5 can open) read-only; errors name `path`.
    static File open_read_as(const std::string& opened, const std::string& path);
    File(Handle handle, std::string path, bool writable)
        : handle_(std::move(handle)), path_(std::move(path)), writable_(writable) {}
    Handle open_dataset(const std::string& name) const;

    Handle handle_;
    std::string path_;
    bool writable_ = false;
};

}  // namespace mixgpt::h5
