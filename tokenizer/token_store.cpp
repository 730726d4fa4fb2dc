#include "tokenizer/token_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/hdf5_check.h"
#include "core/log.h"
#include "tokenizer/dataset_index.h"

namespace mixgpt {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& reason) {
    throw Error(path + ": " + reason);
}

struct Layout {
    int64_t chunk_elements = 0;
    std::vector<uint64_t> chunk_offsets;
};

// The file offsets of the dataset's raw data, one per chunk (a contiguous
// dataset is one chunk).
Layout find_layout(const h5::File& file, const std::string& dataset, int64_t tokens) {
    const std::string& path = file.path();
    h5::Handle data(H5Dopen2(file.id(), dataset.c_str(), H5P_DEFAULT), H5Dclose);
    if (data.id() < 0) fail(path, "cannot open " + dataset + " (" + hdf5_error_message() + ")");
    h5::Handle properties(H5Dget_create_plist(data.id()), H5Pclose);
    H5_CHECK(properties.id());
    if (H5Pget_nfilters(properties.id()) != 0)
        fail(path, dataset +
                       " is compressed or filtered; mixgpt reads uncompressed token datasets "
                       "(rewrite with: h5repack -f NONE)");
    Layout layout;
    const H5D_layout_t kind = H5Pget_layout(properties.id());
    if (kind == H5D_CONTIGUOUS) {
        layout.chunk_elements = std::max<int64_t>(tokens, 1);
        const haddr_t address = H5Dget_offset(data.id());
        if (tokens > 0 && address == HADDR_UNDEF) fail(path, dataset + " has no data (truncated file?)");
        if (tokens > 0) layout.chunk_offsets.push_back(address);
        return layout;
    }
    if (kind != H5D_CHUNKED)
        fail(path, dataset + " has a compact or virtual layout, which mixgpt does not read");
    hsize_t chunk = 0;
    H5_CHECK(H5Pget_chunk(properties.id(), 1, &chunk));
    layout.chunk_elements = static_cast<int64_t>(chunk);
    const int64_t chunks = (tokens + layout.chunk_elements - 1) / layout.chunk_elements;
    layout.chunk_offsets.resize(static_cast<size_t>(chunks));
    for (int64_t c = 0; c < chunks; ++c) {
        const hsize_t coordinate = static_cast<hsize_t>(c * layout.chunk_elements);
        unsigned filter_mask = 0;
        haddr_t address = HADDR_UNDEF;
        hsize_t bytes = 0;
        H5_CHECK(H5Dget_chunk_info_by_coord(data.id(), &coordinate, &filter_mask, &address, &bytes));
        if (address == HADDR_UNDEF)
            fail(path, dataset + " lacks chunk " + std::to_string(c) + " (truncated file?)");
        layout.chunk_offsets[static_cast<size_t>(c)] = address;
    }
    return layout;
}

int64_t nanoseconds(const struct timespec& time) {
    return int64_t{time.tv_sec} * 1'000'000'000 + time.tv_nsec;
}

FileIdentity identity_of(const struct stat& status) {
    return {static_cast<uint64_t>(status.st_dev), static_cast<uint64_t>(status.st_ino),
            static_cast<uint64_t>(status.st_size), nanoseconds(status.st_mtim), nanoseconds(status.st_ctim)};
}

}  // namespace

TokenStore::TokenStore(const std::string& path, const std::string& split, int32_t vocab_limit,
                       std::string sha256)
    : path_(path), dataset_("/" + split + "/tokens"), vocab_limit_(vocab_limit), sha256_(std::move(sha256)) {
    {
        const h5::File file = h5::File::open_read(path);
        const auto shape = file.shape(dataset_);
        if (shape.size() != 1) fail(path, dataset_ + " is not one-dimensional");
        tokens_ = shape[0];
        type_ = file.stored_type(dataset_);
        if (type_ != h5::Type::u16 && type_ != h5::Type::u32)
            fail(path, dataset_ + " must hold uint16 or uint32 tokens in native byte order");
        h5::Handle properties(H5Fget_create_plist(file.id()), H5Pclose);
        H5_CHECK(properties.id());
        hsize_t user_block = 0;
        H5_CHECK(H5Pget_userblock(properties.id(), &user_block));
        if (user_block != 0) fail(path, "HDF5 files with a user block are not supported");
        Layout layout = find_layout(file, dataset_, tokens_);
        chunk_elements_ = layout.chunk_elements;
        chunk_offsets_ = std::move(layout.chunk_offsets);
        chunk_checked_.assign(chunk_offsets_.size(), 0);
    }
    descriptor_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (descriptor_ < 0) fail(path, std::string("cannot open (") + std::strerror(errno) + ")");
    struct stat status {};
    if (::fstat(descriptor_, &status) != 0) {
        ::close(descriptor_);
        fail(path, "cannot read the file size");
    }
    identity_ = identity_of(status);
    for (size_t chunk = 0; chunk < chunk_offsets_.size(); ++chunk) {
        const int64_t elements =
            std::min(chunk_elements_, tokens_ - static_cast<int64_t>(chunk) * chunk_elements_);
        if (chunk_offsets_[chunk] + static_cast<uint64_t>(elements) * h5::type_size(type_) > identity_.size) {
            ::close(descriptor_);
            fail(path, dataset_ + " extends past the end of the file (truncated)");
        }
    }
}

TokenStore::~TokenStore() {
    if (descriptor_ >= 0) ::close(descriptor_);
}

bool FileIdentity::operator==(const FileIdentity& other) const {
    return device == other.device && inode == other.inode && size == other.size &&
           modified_ns == other.modified_ns && changed_ns == other.changed_ns;
}

void TokenStore::check_unchanged() const {
    struct stat status {};
    const bool present = ::stat(path_.c_str(), &status) == 0;
    const FileIdentity now = present ? identity_of(status) : FileIdentity{};
    if (present && now == identity_) return;
    std::string what =
        !present                                                         ? "was removed"
        : now.inode != identity_.inode || now.device != identity_.device ? "was replaced by another file"
        : now.size != identity_.size
            ? format("changed size from %llu to %llu bytes", static_cast<unsigned long long>(identity_.size),
                     static_cast<unsigned long long>(now.size))
            : "was rewritten";
    fail(path_, what +
                    " while this run read it (a dataset must not change under a run: prepare a new one "
                    "in another folder)");
}

void TokenStore::read_chunk(int64_t chunk, int64_t first, int64_t count, int32_t* out) {
    const size_t element = h5::type_size(type_);
    const size_t bytes = static_cast<size_t>(count) * element;
    scratch_.resize(bytes);
    const uint64_t offset =
        chunk_offsets_[static_cast<size_t>(chunk)] + static_cast<uint64_t>(first) * element;
    size_t done = 0;
    while (done < bytes) {
        const ssize_t got =
            ::pread(descriptor_, scratch_.data() + done, bytes - done, static_cast<off_t>(offset + done));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) fail(path_, std::string("read error (") + std::strerror(errno) + ")");
        if (got == 0) {
            check_unchanged();
            fail(path_, "ends before its tokens (truncated while this run read it)");
        }
        done += static_cast<size_t>(got);
    }
    if (type_ == h5::Type::u16) {
        const auto* source = reinterpret_cast<const uint16_t*>(scratch_.data());
        for (int64_t i = 0; i < count; ++i) out[i] = static_cast<int32_t>(source[i]);
    } else {
        const auto* source = reinterpret_cast<const uint32_t*>(scratch_.data());
        for (int64_t i = 0; i < count; ++i) out[i] = static_cast<int32_t>(source[i]);
    }
}

void TokenStore::check_chunk(int64_t chunk) {
    if (chunk_checked_[static_cast<size_t>(chunk)] != 0) return;
    const int64_t first = chunk * chunk_elements_;
    const int64_t count = std::min(chunk_elements_, tokens_ - first);
    std::vector<int32_t> ids(static_cast<size_t>(count));
    read_chunk(chunk, 0, count, ids.data());
    for (int64_t i = 0; i < count; ++i) {
        // uint32 ids above INT32_MAX read as negative: out of range as well.
        if (ids[static_cast<size_t>(i)] < 0 || ids[static_cast<size_t>(i)] >= vocab_limit_)
            fail(path_,
                 format("%s[%lld] = %u is not below the vocabulary size %d (a dataset made with another "
                        "tokenizer, or a corrupt file)",
                        dataset_.c_str(), static_cast<long long>(first + i),
                        static_cast<unsigned>(ids[static_cast<size_t>(i)]), vocab_limit_));
    }
    chunk_checked_[static_cast<size_t>(chunk)] = 1;
}

void TokenStore::read(int64_t offset, int64_t count, int32_t* out) {
    MIXGPT_REQUIRE(offset >= 0 && count >= 0 && offset + count <= tokens_,
                   format("%s: read of %s[%lld, %lld) beyond its %lld tokens", path_.c_str(),
                          dataset_.c_str(), static_cast<long long>(offset),
                          static_cast<long long>(offset + count), static_cast<long long>(tokens_)));
    if (!sha256_.empty()) {
        check_shard_checksum(path_, sha256_);
        sha256_.clear();
    }
    while (count > 0) {
        const int64_t chunk = offset / chunk_elements_;
        const int64_t first = offset - chunk * chunk_elements_;
        const int64_t length = std::min(count, chunk_elements_ - first);
        check_chunk(chunk);
        read_chunk(chunk, first, length, out);
        offset += length;
        count -= length;
        out += length;
    }
    check_unchanged();
}

}  // namespace mixgpt
