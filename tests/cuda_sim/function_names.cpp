#include "tests/cuda_sim/function_names.h"

#include <dlfcn.h>
#include <elf.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace mixgpt::cuda_sim {
namespace {

// The functions of the running executable by their address in memory.
std::map<uintptr_t, std::string> read_function_symbols() {
    std::map<uintptr_t, std::string> functions;
    std::ifstream file("/proc/self/exe", std::ios::binary);
    const std::vector<char> image((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    if (image.size() < sizeof(Elf64_Ehdr) || std::memcmp(image.data(), ELFMAG, SELFMAG) != 0)
        return functions;
    Elf64_Ehdr header;
    std::memcpy(&header, image.data(), sizeof header);
    Dl_info info{};
    // A position-independent executable is loaded at an offset: that of this function's object.
    const uintptr_t bias =
        header.e_type == ET_DYN && dladdr(reinterpret_cast<void*>(&read_function_symbols), &info)
            ? reinterpret_cast<uintptr_t>(info.dli_fbase)
            : 0;
    const auto section = [&](size_t index) {
        Elf64_Shdr entry{};
        const size_t offset = header.e_shoff + index * sizeof(Elf64_Shdr);
        if (offset + sizeof entry <= image.size()) std::memcpy(&entry, image.data() + offset, sizeof entry);
        return entry;
    };
    for (size_t s = 0; s < header.e_shnum; ++s) {
        const Elf64_Shdr symbols = section(s);
        if (symbols.sh_type != SHT_SYMTAB || symbols.sh_offset + symbols.sh_size > image.size()) continue;
        const Elf64_Shdr strings = section(symbols.sh_link);
        for (size_t offset = 0; offset + sizeof(Elf64_Sym) <= symbols.sh_size; offset += sizeof(Elf64_Sym)) {
            Elf64_Sym symbol;
            std::memcpy(&symbol, image.data() + symbols.sh_offset + offset, sizeof symbol);
            if (ELF64_ST_TYPE(symbol.st_info) != STT_FUNC || symbol.st_value == 0 ||
                symbol.st_name >= strings.sh_size || strings.sh_offset + strings.sh_size > image.size())
                continue;
            functions.emplace(bias + symbol.st_value, image.data() + strings.sh_offset + symbol.st_name);
        }
    }
    return functions;
}

}  // namespace

const char* function_name(const void* address) {
    static const std::map<uintptr_t, std::string> functions = read_function_symbols();
    const auto found = functions.find(reinterpret_cast<uintptr_t>(address));
    return found == functions.end() ? nullptr : found->second.c_str();
}

}  // namespace mixgpt::cuda_sim
