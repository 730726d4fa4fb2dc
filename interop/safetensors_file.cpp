#include "interop/safetensors_file.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace mixgpt::interop {

SafetensorsFile read_safetensors(const std::string& path) {
    std::error_code error;
    const uint64_t file_size = std::filesystem::file_size(path, error);
    MIXGPT_REQUIRE(!error, path + ": cannot read (" + error.message() + ")");
    std::ifstream file(path, std::ios::binary);
    MIXGPT_REQUIRE(file.good(), path + ": cannot open");
    unsigned char first_bytes[8] = {};
    file.read(reinterpret_cast<char*>(first_bytes), 8);
    const uint64_t header_bytes =
        read_header_length(first_bytes, static_cast<uint64_t>(file.gcount()), file_size, path);
    std::string json(header_bytes, '\0');
    file.read(json.data(), static_cast<std::streamsize>(header_bytes));
    MIXGPT_REQUIRE(static_cast<uint64_t>(file.gcount()) == header_bytes, path + ": read error in the header");

    SafetensorsFile result;
    result.path = path;
    result.header = parse_safetensors_header(json, file_size, path);
    result.data.resize(file_size - result.header.data_start());
    file.read(reinterpret_cast<char*>(result.data.data()), static_cast<std::streamsize>(result.data.size()));
    MIXGPT_REQUIRE(static_cast<uint64_t>(file.gcount()) == result.data.size(),
                   path + ": read error in the data");
    return result;
}

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty()) header["__metadata__"] = metadata;
    uint64_t offset = 0;
    for (const TensorToWrite& tensor : tensors) {
        uint64_t expected = safetensors_dtype_size(tensor.dtype);
        MIXGPT_REQUIRE(expected != 0,
                       path + ": tensor " + tensor.name + " has unknown dtype " + tensor.dtype);
        for (int64_t extent : tensor.shape) expected *= static_cast<uint64_t>(extent);
        MIXGPT_REQUIRE(expected == tensor.bytes.size(),
                       path + ": tensor " + tensor.name + " has " + std::to_string(tensor.bytes.size()) +
                           " bytes, its shape needs " + std::to_string(expected));
        header[tensor.name] = {{"dtype", tensor.dtype},
                               {"shape", tensor.shape},
                               {"data_offsets", {offset, offset + tensor.bytes.size()}}};
        offset += tensor.bytes.size();
    }
    std::string json = header.dump();
    json.resize((json.size() + 8 + 7) / 8 * 8 - 8, ' ');
    unsigned char length[8];
    for (int i = 0; i < 8; ++i)
        length[i] = static_cast<unsigned char>(static_cast<uint64_t>(json.size()) >> (8 * i));

    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    MIXGPT_REQUIRE(file.good(), path + ": cannot create");
    file.write(reinterpret_cast<const char*>(length), 8);
    file.write(json.data(), static_cast<std::streamsize>(json.size()));
    for (const TensorToWrite& tensor : tensors)
        file.write(reinterpret_cast<const char*>(tensor.bytes.data()),
                   static_cast<std::streamsize>(tensor.bytes.size()));
    file.flush();
    MIXGPT_REQUIRE(file.good(), path + ": write error (disk full?)");
}

}  // namespace mixgpt::interop
