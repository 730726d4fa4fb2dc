#include "interop/safetensors_header.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"

namespace mixgpt::interop {
namespace {

using Json = nlohmann::json;

struct DtypeSize {
    const char* name;
    size_t bytes;
};

constexpr DtypeSize kDtypes[] = {{"F64", 8}, {"F32", 4}, {"F16", 2},  {"BF16", 2},    {"I64", 8},
                                 {"I32", 4}, {"I16", 2}, {"I8", 1},   {"U64", 8},     {"U32", 4},
                                 {"U16", 2}, {"U8", 1},  {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};

[[noreturn]] void fail(const std::string& source, const std::string& reason) {
    throw Error(source + ": " + reason);
}

// A name as it may appear in a one-line message: control characters escaped, at most 80 bytes.
std::string printable(const std::string& name) {
    std::string text;
    for (unsigned char c : name.substr(0, 80)) {
        if (c < 0x20 || c == 0x7f) {
            const char digits[] = "0123456789abcdef";
            text += "\\x";
            text += digits[c >> 4];
            text += digits[c & 15];
        } else {
            text += static_cast<char>(c);
        }
    }
    return name.size() > 80 ? text + "..." : text;
}

uint64_t unsigned_field(const Json& value, const std::string& source, const std::string& where) {
    if (!value.is_number_unsigned()) fail(source, where + " is not a non-negative integer");
    return value.get<uint64_t>();
}

SafetensorsTensor parse_tensor(const std::string& name, const Json& entry, uint64_t data_bytes,
                               const std::string& source) {
    const std::string where = "tensor '" + printable(name) + "'";
    if (!entry.is_object()) fail(source, where + " is not a JSON object");
    for (const auto& [key, value] : entry.items()) {
        (void)value;
        if (key != "dtype" && key != "shape" && key != "data_offsets")
            fail(source, where + " has an unknown field '" + printable(key) + "'");
    }
    for (const char* field : {"dtype", "shape", "data_offsets"})
        if (!entry.contains(field)) fail(source, where + " has no '" + field + "'");
    SafetensorsTensor tensor;
    tensor.name = name;
    const Json& dtype = entry["dtype"];
    if (!dtype.is_string()) fail(source, where + " dtype is not a string");
    tensor.dtype = dtype.get<std::string>();
    const size_t element_bytes = safetensors_dtype_size(tensor.dtype);
    if (element_bytes == 0) fail(source, where + " has unknown dtype '" + printable(tensor.dtype) + "'");

    const Json& shape = entry["shape"];
    if (!shape.is_array()) fail(source, where + " shape is not an array");
    uint64_t bytes = element_bytes;
    for (const Json& extent : shape) {
        const uint64_t size = unsigned_field(extent, source, where + " shape entry");
        if (size > static_cast<uint64_t>(INT64_MAX)) fail(source, where + " shape entry is too large");
        tensor.shape.push_back(static_cast<int64_t>(size));
        if (size != 0 && bytes > UINT64_MAX / size) fail(source, where + " shape's byte size overflows");
        bytes *= size;
    }

    const Json& offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2) fail(source, where + " data_offsets is not [begin, end]");
    tensor.begin = unsigned_field(offsets[0], source, where + " data_offsets begin");
    tensor.end = unsigned_field(offsets[1], source, where + " data_offsets end");
    if (tensor.begin > tensor.end) fail(source, where + " data_offsets begin is after end");
    if (tensor.end > data_bytes)
        fail(source, where + " data_offsets end " + std::to_string(tensor.end) +
                         " is past the data area of " + std::to_string(data_bytes) +
                         " bytes (truncated file?)");
    if (tensor.end - tensor.begin != bytes)
        fail(source, where + " holds " + std::to_string(tensor.end - tensor.begin) +
                         " bytes, its dtype and shape need " + std::to_string(bytes));
    return tensor;
}

std::map<std::string, std::string> parse_metadata(const Json& entry, const std::string& source) {
    if (!entry.is_object()) fail(source, "__metadata__ is not a JSON object");
    std::map<std::string, std::string> metadata;
    for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) fail(source, "__metadata__ value '" + printable(key) + "' is not a string");
        metadata[key] = value.get<std::string>();
    }
    return metadata;
}

// The tensors, sorted by offset, must tile [0, data_bytes) exactly.
void check_coverage(std::vector<SafetensorsTensor>& tensors, uint64_t data_bytes, const std::string& source) {
    std::sort(tensors.begin(), tensors.end(), [](const SafetensorsTensor& a, const SafetensorsTensor& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    uint64_t covered = 0;
    const SafetensorsTensor* previous = nullptr;
    for (const SafetensorsTensor& tensor : tensors) {
        if (tensor.begin < covered)
            fail(source, "tensors '" + printable(previous->name) + "' and '" + printable(tensor.name) +
                             "' overlap in the data area");
        if (tensor.begin > covered)
            fail(source, "bytes " + std::to_string(covered) + " to " + std::to_string(tensor.begin) +
                             " of the data area belong to no tensor");
        covered = tensor.end;
        previous = &tensor;
    }
    if (covered != data_bytes)
        fail(source, "the data area has " + std::to_string(data_bytes) + " bytes, the tensors cover " +
                         std::to_string(covered));
}

}  // namespace

const SafetensorsTensor* SafetensorsHeader::find(const std::string& name) const {
    for (const SafetensorsTensor& tensor : tensors)
        if (tensor.name == name) return &tensor;
    return nullptr;
}

size_t safetensors_dtype_size(std::string_view dtype) {
    for (const DtypeSize& known : kDtypes)
        if (dtype == known.name) return known.bytes;
    return 0;
}

uint64_t read_header_length(const unsigned char* first_bytes, uint64_t available, uint64_t file_size,
                            const std::string& source) {
    if (available < 8 || file_size < 8)
        fail(source, "truncated safetensors file (" + std::to_string(std::min(available, file_size)) +
                         " bytes, shorter than the 8-byte header length)");
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | first_bytes[i];
    if (length == 0) fail(source, "safetensors header length is 0");
    if (length > kMaxHeaderBytes)
        fail(source, "safetensors header length " + std::to_string(length) + " exceeds the limit of " +
                         std::to_string(kMaxHeaderBytes) + " bytes");
    if (length > file_size - 8)
        fail(source, "safetensors header length " + std::to_string(length) +
                         " is past the end of the file (" + std::to_string(file_size) + " bytes)");
    return length;
}

SafetensorsHeader parse_safetensors_header(std::string_view json, uint64_t file_size,
                                           const std::string& source) {
    SafetensorsHeader header;
    header.header_bytes = json.size();
    if (json.size() > kMaxHeaderBytes || file_size < 8 || json.size() > file_size - 8)
        fail(source, "safetensors header is larger than the file");
    if (json.empty() || json[0] != '{') fail(source, "safetensors header does not start with '{'");
    std::set<std::string> keys;
    std::string duplicate;
    const Json::parser_callback_t reject_duplicates = [&](int depth, Json::parse_event_t event,
                                                          Json& parsed) {
        if (depth == 1 && event == Json::parse_event_t::key &&
            !keys.insert(parsed.get<std::string>()).second && duplicate.empty())
            duplicate = parsed.get<std::string>();
        return true;
    };
    const Json root = Json::parse(json.begin(), json.end(), reject_duplicates, false);
    if (root.is_discarded()) fail(source, "safetensors header is not valid JSON");
    if (!root.is_object()) fail(source, "safetensors header is not a JSON object");
    if (!duplicate.empty()) fail(source, "tensor '" + printable(duplicate) + "' appears twice in the header");
    const uint64_t data_bytes = file_size - 8 - json.size();
    for (const auto& [name, entry] : root.items()) {
        if (name == "__metadata__") {
            header.metadata = parse_metadata(entry, source);
        } else {
            header.tensors.push_back(parse_tensor(name, entry, data_bytes, source));
        }
    }
    check_coverage(header.tensors, data_bytes, source);
    return header;
}

}  // namespace mixgpt::interop
