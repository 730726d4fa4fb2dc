#include "core/h5.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <mutex>

#include "core/hdf5_check.h"

namespace mixgpt {

namespace {
herr_t record_innermost(unsigned depth, const H5E_error2_t* entry, void* text) {
    if (depth == 0 && entry->desc != nullptr) *static_cast<std::string*>(text) = entry->desc;
    return 0;
}
}  // namespace

std::string hdf5_error_message() {
    std::string text;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, record_innermost, &text);
    H5Eclear2(H5E_DEFAULT);
    return text.empty() ? "HDF5 call failed" : text;
}

namespace h5 {
namespace {

// Also keeps HDF5 from closing, at exit, files it failed to close: HDF5 1.10 cannot close a file
// whose metadata flush failed (a full disk) and crashes retrying at exit. Every file mixgpt opens
// is closed by its File; one that cannot be is dropped with the process.
void silence_hdf5_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        H5dont_atexit();
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    });
}

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw Error(path + ": " + what); }

// True when the file system holding `path` has no block left for an ordinary user.
bool disk_is_full(const std::string& path) {
    std::string directory = std::filesystem::path(path).parent_path().string();
    if (directory.empty()) directory = ".";
    struct statvfs status {};
    return ::statvfs(directory.c_str(), &status) == 0 && status.f_bavail == 0;
}

// A failed write names the file and, when the disk is full, says so instead of HDF5's text.
// `what` completes "cannot ...": "write dataset '/train/tokens'".
void check_write(int64_t status, const std::string& path, const std::string& what) {
    if (status >= 0) return;
    const int saved_errno = errno;
    const std::string message = hdf5_error_message();
    if (saved_errno == ENOSPC || disk_is_full(path))
        fail(path, "no space left on device (cannot " + what + ")");
    fail(path, "cannot " + what + " (" + message + ")");
}

std::vector<hsize_t> to_dims(const std::vector<int64_t>& shape) {
    return std::vector<hsize_t>(shape.begin(), shape.end());
}

Handle open_object(hid_t file, const std::string& path, const std::string& object_path) {
    const hid_t id = H5Oopen(file, object_path.c_str(), H5P_DEFAULT);
    if (id < 0) {
        H5Eclear2(H5E_DEFAULT);
        fail(path, "missing object '" + object_path + "'");
    }
    return Handle(id, H5Oclose);
}

}  // namespace

Handle& Handle::operator=(Handle&& other) noexcept {
    if (this != &other) {
        if (id_ >= 0 && closer_ != nullptr) closer_(id_);
        id_ = other.id_;
        closer_ = other.closer_;
        other.id_ = -1;
    }
    return *this;
}

Handle::~Handle() {
    if (id_ >= 0 && closer_ != nullptr) closer_(id_);
}

hid_t Handle::release() {
    const hid_t id = id_;
    id_ = -1;
    return id;
}

hid_t native_type(Type type) {
    switch (type) {
        case Type::u8:
            return H5T_NATIVE_UINT8;
        case Type::u16:
            return H5T_NATIVE_UINT16;
        case Type::u32:
            return H5T_NATIVE_UINT32;
        case Type::i32:
            return H5T_NATIVE_INT32;
        case Type::i64:
            return H5T_NATIVE_INT64;
        case Type::f32:
            return H5T_NATIVE_FLOAT;
        case Type::f64:
            return H5T_NATIVE_DOUBLE;
    }
    return H5T_NATIVE_UINT8;
}

size_t type_size(Type type) {
    switch (type) {
        case Type::u8:
            return 1;
        case Type::u16:
            return 2;
        case Type::u32:
        case Type::i32:
        case Type::f32:
            return 4;
        case Type::i64:
        case Type::f64:
            return 8;
    }
    return 1;
}

File File::create(const std::string& path, size_t user_block_bytes) {
    silence_hdf5_once();
    Handle properties(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
    H5_CHECK(properties.id());
    if (user_block_bytes > 0) H5_CHECK(H5Pset_userblock(properties.id(), user_block_bytes));
    const hid_t id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, properties.id(), H5P_DEFAULT);
    if (id < 0) {
        H5Eclear2(H5E_DEFAULT);
        fail(path, "cannot create HDF5 file");
    }
    return File(Handle(id, H5Fclose), path, true);
}

File File::open_read_as(const std::string& opened, const std::string& path) {
    if (H5Fis_hdf5(opened.c_str()) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        fail(path, "not an HDF5 file (or truncated)");
    }
    const hid_t id = H5Fopen(opened.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (id < 0) {
        H5Eclear2(H5E_DEFAULT);
        fail(path, "cannot open HDF5 file (truncated or corrupt)");
    }
    return File(Handle(id, H5Fclose), path, false);
}

File File::open_read(const std::string& path) {
    silence_hdf5_once();
    if (FILE* probe = std::fopen(path.c_str(), "rb")) {
        std::fclose(probe);
    } else {
        fail(path, "cannot open (missing or unreadable)");
    }
    return open_read_as(path, path);
}

File File::open_read(int descriptor, const std::string& path) {
    silence_hdf5_once();
    return open_read_as("/proc/self/fd/" + std::to_string(descriptor), path);
}

File File::open_write(const std::string& path) {
    silence_hdf5_once();
    const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    if (id < 0) {
        H5Eclear2(H5E_DEFAULT);
        fail(path, "cannot open HDF5 file for writing");
    }
    return File(Handle(id, H5Fclose), path, true);
}

File::~File() {
    if (id() < 0) return;
    // A writable file destroyed on a full disk is being abandoned (close() was not reached or
    // failed): its content is truncated, so its blocks are free at once even if HDF5 keeps it open.
    if (writable_ && disk_is_full(path_)) static_cast<void>(::truncate(path_.c_str(), 0));
    if (H5Fclose(handle_.release()) < 0) H5Eclear2(H5E_DEFAULT);
}

void File::close() {
    if (id() < 0) return;
    if (writable_) check_write(H5Fflush(id(), H5F_SCOPE_GLOBAL), path_, "write");
    check_write(H5Fclose(handle_.release()), path_, "close");
}

bool File::exists(const std::string& object_path) const {
    // Check each prefix: H5Lexists fails on a missing intermediate group.
    size_t position = 0;
    while (position != std::string::npos) {
        position = object_path.find('/', position + 1);
        const std::string prefix = object_path.substr(0, position);
        if (prefix.empty() || prefix == "/") continue;
        const htri_t found = H5Lexists(id(), prefix.c_str(), H5P_DEFAULT);
        if (found <= 0) {
            H5Eclear2(H5E_DEFAULT);
            return false;
        }
    }
    return true;
}

void File::create_group(const std::string& group_path) {
    const hid_t id_group = H5Gcreate2(id(), group_path.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check_write(id_group, path_, "create group '" + group_path + "'");
    H5_CHECK(H5Gclose(id_group));
}

void File::write(const std::string& name, Type type, const void* data, const std::vector<int64_t>& shape) {
    const auto dims = to_dims(shape);
    Handle space(shape.empty() ? H5Screate(H5S_SCALAR)
                               : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                 H5Sclose);
    H5_CHECK(space.id());
    Handle properties(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    H5_CHECK(properties.id());
    H5_CHECK(H5Pset_obj_track_times(properties.id(), false));  // same content, same bytes
    Handle dataset(H5Dcreate2(id(), name.c_str(), native_type(type), space.id(), H5P_DEFAULT, properties.id(),
                              H5P_DEFAULT),
                   H5Dclose);
    check_write(dataset.id(), path_, "create dataset '" + name + "'");
    check_write(H5Dwrite(dataset.id(), native_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, data), path_,
                "write dataset '" + name + "'");
}

Handle File::open_dataset(const std::string& name) const {
    if (!exists(name)) fail(path_, "missing dataset '" + name + "'");
    const hid_t dataset = H5Dopen2(id(), name.c_str(), H5P_DEFAULT);
    if (dataset < 0) {
        H5Eclear2(H5E_DEFAULT);
        fail(path_, "cannot open dataset '" + name + "'");
    }
    return Handle(dataset, H5Dclose);
}

std::vector<int64_t> File::shape(const std::string& name) const {
    Handle dataset = open_dataset(name);
    Handle space(H5Dget_space(dataset.id()), H5Sclose);
    H5_CHECK(space.id());
    const int rank = H5Sget_simple_extent_ndims(space.id());
    H5_CHECK(rank);
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    H5_CHECK(H5Sget_simple_extent_dims(space.id(), dims.data(), nullptr));
    return std::vector<int64_t>(dims.begin(), dims.end());
}

Type File::stored_type(const std::string& name) const {
    Handle dataset = open_dataset(name);
    Handle stored(H5Dget_type(dataset.id()), H5Tclose);
    H5_CHECK(stored.id());
    for (Type type : {Type::u8, Type::u16, Type::u32, Type::i32, Type::i64, Type::f32, Type::f64}) {
        if (H5Tequal(stored.id(), native_type(type)) > 0) return type;
    }
    fail(path_, "dataset '" + name + "' has an unsupported element type");
}

void File::read(const std::string& name, Type type, void* data, int64_t expected_count) const {
    int64_t count = 1;
    for (int64_t d : shape(name)) count *= d;
    if (count != expected_count)
        fail(path_, "dataset '" + name + "' has " + std::to_string(count) + " elements, expected " +
                        std::to_string(expected_count));
    Handle dataset = open_dataset(name);
    if (H5Dread(dataset.id(), native_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
        fail(path_, "cannot read dataset '" + name + "' (" + hdf5_error_message() + ")");
}

void File::read_range(const std::string& name, Type type, void* data, int64_t offset, int64_t count) const {
    Handle dataset = open_dataset(name);
    Handle space(H5Dget_space(dataset.id()), H5Sclose);
    H5_CHECK(space.id());
    const hsize_t start = static_cast<hsize_t>(offset), length = static_cast<hsize_t>(count);
    H5_CHECK(H5Sselect_hyperslab(space.id(), H5S_SELECT_SET, &start, nullptr, &length, nullptr));
    Handle memory(H5Screate_simple(1, &length, nullptr), H5Sclose);
    H5_CHECK(memory.id());
    if (H5Dread(dataset.id(), native_type(type), memory.id(), space.id(), H5P_DEFAULT, data) < 0)
        fail(path_, "cannot read dataset '" + name + "' at " + std::to_string(offset) + " (" +
                        hdf5_error_message() + ")");
}

void File::create_extendible(const std::string& name, Type type, int64_t chunk_elements) {
    const hsize_t initial = 0, maximum = H5S_UNLIMITED, chunk = static_cast<hsize_t>(chunk_elements);
    Handle space(H5Screate_simple(1, &initial, &maximum), H5Sclose);
    H5_CHECK(space.id());
    Handle properties(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    H5_CHECK(properties.id());
    H5_CHECK(H5Pset_chunk(properties.id(), 1, &chunk));
    H5_CHECK(H5Pset_obj_track_times(properties.id(), false));
    Handle dataset(H5Dcreate2(id(), name.c_str(), native_type(type), space.id(), H5P_DEFAULT, properties.id(),
                              H5P_DEFAULT),
                   H5Dclose);
    check_write(dataset.id(), path_, "create dataset '" + name + "'");
}

void File::append(const std::string& name, Type type, const void* data, int64_t count) {
    if (count == 0) return;
    Handle dataset = open_dataset(name);
    Handle old_space(H5Dget_space(dataset.id()), H5Sclose);
    H5_CHECK(old_space.id());
    hsize_t old_size = 0;
    H5_CHECK(H5Sget_simple_extent_dims(old_space.id(), &old_size, nullptr));
    const hsize_t new_size = old_size + static_cast<hsize_t>(count), length = static_cast<hsize_t>(count);
    check_write(H5Dset_extent(dataset.id(), &new_size), path_, "extend dataset '" + name + "'");
    Handle space(H5Dget_space(dataset.id()), H5Sclose);
    H5_CHECK(space.id());
    H5_CHECK(H5Sselect_hyperslab(space.id(), H5S_SELECT_SET, &old_size, nullptr, &length, nullptr));
    Handle memory(H5Screate_simple(1, &length, nullptr), H5Sclose);
    H5_CHECK(memory.id());
    check_write(H5Dwrite(dataset.id(), native_type(type), memory.id(), space.id(), H5P_DEFAULT, data), path_,
                "write dataset '" + name + "'");
}

namespace {

void write_attribute(hid_t file, const std::string& path, const std::string& object_path,
                     const std::string& name, hid_t type, const void* value) {
    Handle object = open_object(file, path, object_path);
    if (H5Aexists(object.id(), name.c_str()) > 0) H5_CHECK(H5Adelete(object.id(), name.c_str()));
    Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    H5_CHECK(space.id());
    Handle attribute(H5Acreate2(object.id(), name.c_str(), type, space.id(), H5P_DEFAULT, H5P_DEFAULT),
                     H5Aclose);
    check_write(attribute.id(), path, "create attribute '" + name + "'");
    check_write(H5Awrite(attribute.id(), type, value), path, "write attribute '" + name + "'");
}

Handle open_attribute(hid_t file, const std::string& path, const std::string& object_path,
                      const std::string& name) {
    Handle object = open_object(file, path, object_path);
    if (H5Aexists(object.id(), name.c_str()) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        fail(path, "missing attribute '" + name + "' on '" + object_path + "'");
    }
    Handle attribute(H5Aopen(object.id(), name.c_str(), H5P_DEFAULT), H5Aclose);
    H5_CHECK(attribute.id());
    return attribute;
}

}  // namespace

void File::set_attribute(const std::string& object_path, const std::string& name, int64_t value) {
    write_attribute(id(), path_, object_path, name, H5T_NATIVE_INT64, &value);
}

void File::set_attribute(const std::string& object_path, const std::string& name, double value) {
    write_attribute(id(), path_, object_path, name, H5T_NATIVE_DOUBLE, &value);
}

void File::set_attribute(const std::string& object_path, const std::string& name, const std::string& value) {
    Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5_CHECK(type.id());
    H5_CHECK(H5Tset_size(type.id(), value.empty() ? 1 : value.size()));
    H5_CHECK(H5Tset_strpad(type.id(), H5T_STR_NULLPAD));
    write_attribute(id(), path_, object_path, name, type.id(), value.empty() ? "" : value.data());
}

bool File::has_attribute(const std::string& object_path, const std::string& name) const {
    if (object_path != "/" && !exists(object_path)) return false;
    Handle object = open_object(id(), path_, object_path);
    return H5Aexists(object.id(), name.c_str()) > 0;
}

int64_t File::attribute_int(const std::string& object_path, const std::string& name) const {
    Handle attribute = open_attribute(id(), path_, object_path, name);
    int64_t value = 0;
    H5_CHECK(H5Aread(attribute.id(), H5T_NATIVE_INT64, &value));
    return value;
}

double File::attribute_double(const std::string& object_path, const std::string& name) const {
    Handle attribute = open_attribute(id(), path_, object_path, name);
    double value = 0;
    H5_CHECK(H5Aread(attribute.id(), H5T_NATIVE_DOUBLE, &value));
    return value;
}

std::string File::attribute_string(const std::string& object_path, const std::string& name) const {
    Handle attribute = open_attribute(id(), path_, object_path, name);
    Handle type(H5Aget_type(attribute.id()), H5Tclose);
    H5_CHECK(type.id());
    if (H5Tget_class(type.id()) != H5T_STRING) fail(path_, "attribute '" + name + "' is not a string");
    if (H5Tis_variable_str(type.id()) > 0) {
        char* text = nullptr;
        H5_CHECK(H5Aread(attribute.id(), type.id(), &text));
        std::string value = text != nullptr ? text : "";
        H5free_memory(text);
        return value;
    }
    std::string value(H5Tget_size(type.id()), '\0');
    H5_CHECK(H5Aread(attribute.id(), type.id(), value.data()));
    while (!value.empty() && value.back() == '\0') value.pop_back();
    return value;
}

}  // namespace h5
}  // namespace mixgpt
