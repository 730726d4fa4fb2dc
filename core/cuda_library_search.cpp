#include "core/cuda_library_search.h"

#include <dlfcn.h>
#include <elf.h>
#include <glob.h>
#include <link.h>
#include <sys/stat.h>

#include <cctype>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.h"

namespace mixgpt {
namespace {

std::vector<std::string> split(const std::string& text, char separator) {
    std::vector<std::string> parts;
    std::stringstream stream(text);
    std::string part;
    while (std::getline(stream, part, separator))
        if (!part.empty()) parts.push_back(part);
    return parts;
}

// Paths matching a shell pattern, sorted (glob's order); none when nothing matches.
std::vector<std::string> glob_paths(const std::string& pattern) {
    glob_t found{};
    std::vector<std::string> paths;
    if (glob(pattern.c_str(), 0, nullptr, &found) == 0)
        for (size_t i = 0; i < found.gl_pathc; ++i) paths.emplace_back(found.gl_pathv[i]);
    globfree(&found);
    return paths;
}

bool is_directory(const std::string& path) {
    struct stat info {};
    return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

bool is_file(const std::string& path) {
    struct stat info {};
    return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

std::string real_path(const std::string& path) {
    char resolved[PATH_MAX];
    return realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : path;
}

std::string parent_of(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
}

// The folders /etc/ld.so.conf.d/*.conf name (one per line; comments and include lines skipped).
std::vector<std::string> loader_configured_folders() {
    std::vector<std::string> folders;
    for (const std::string& conf : glob_paths("/etc/ld.so.conf.d/*.conf")) {
        std::ifstream file(conf);
        std::string line;
        while (std::getline(file, line)) {
            line.erase(0, line.find_first_not_of(" \t"));
            if (!line.empty() && line[0] == '/')
                folders.push_back(line.substr(0, line.find_first_of(" \t#")));
        }
    }
    return folders;
}

// PyTorch's CUDA wheels keep their libraries in site-packages/nvidia/<package>/lib (nvidia/cu13/lib
// for CUDA 13's own wheels); a python3 at PREFIX/bin/python3 has PREFIX/lib/python3.X/site-packages.
std::vector<std::string> python_wheel_folders(const EnvironmentLookup& environment) {
    std::vector<std::string> prefixes;
    for (const std::string& folder : split(environment("PATH"), ':'))
        if (is_file(folder + "/python3")) prefixes.push_back(parent_of(folder));
    for (const char* variable : {"VIRTUAL_ENV", "CONDA_PREFIX"})
        if (!environment(variable).empty()) prefixes.push_back(environment(variable));
    prefixes.insert(prefixes.end(), {"/opt/torch/.venv", "/usr/local", "/usr"});
    if (!environment("HOME").empty()) prefixes.push_back(environment("HOME") + "/.local");
    std::vector<std::string> folders;
    for (const std::string& prefix : prefixes)
        for (const char* packages : {"site-packages", "dist-packages"})
            for (const std::string& folder :
                 glob_paths(prefix + "/lib/python3*/" + packages + "/nvidia/*/lib"))
                folders.push_back(folder);
    for (const std::string& folder : glob_paths("/usr/lib/python3/dist-packages/nvidia/*/lib"))
        folders.push_back(folder);
    return folders;
}

// The integer after "<stem>." in a file name ("libcublasLt.so.12.4.5" -> 12), -1 if none.
int soname_major_of(const std::string& file_name, const std::string& stem) {
    if (file_name.rfind(stem + ".", 0) != 0) return -1;
    const char* digits = file_name.c_str() + stem.size() + 1;
    if (*digits < '0' || *digits > '9') return -1;
    return std::atoi(digits);
}

std::string cuda_text(int version) {  // 13000 -> "13.0"
    return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// The section named `wanted` of an ELF64 file, read whole; empty when there is none.
std::string elf_section(const std::string& path, const char* wanted) {
    std::ifstream file(path, std::ios::binary);
    Elf64_Ehdr header{};
    if (!file.read(reinterpret_cast<char*>(&header), sizeof header) ||
        std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
        header.e_shentsize != sizeof(Elf64_Shdr) || header.e_shstrndx >= header.e_shnum)
        return {};
    std::vector<Elf64_Shdr> sections(header.e_shnum);
    file.seekg(static_cast<std::streamoff>(header.e_shoff));
    if (!file.read(reinterpret_cast<char*>(sections.data()),
                   static_cast<std::streamsize>(sections.size() * sizeof(Elf64_Shdr))))
        return {};
    const auto read = [&](const Elf64_Shdr& section) {
        std::string bytes(section.sh_size, '\0');
        file.seekg(static_cast<std::streamoff>(section.sh_offset));
        file.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        return file ? bytes : std::string();
    };
    const std::string names = read(sections[header.e_shstrndx]);
    for (const Elf64_Shdr& section : sections)
        if (section.sh_name < names.size() && std::strcmp(names.c_str() + section.sh_name, wanted) == 0 &&
            section.sh_type == SHT_PROGBITS)
            return read(section);
    return {};
}

// The text after `marker` up to the first character that is not a digit or a dot.
std::string version_after(const std::string& text, const std::string& marker) {
    const size_t at = text.find(marker);
    if (at == std::string::npos) return {};
    const size_t begin = at + marker.size();
    size_t end = begin;
    while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.'))
        ++end;
    return text.substr(begin, end - begin);
}

// The CUDA version a candidate was built for ("13.0", "12", or "" when unknown) and its description.
struct Candidate {
    std::string path, cuda, description;
};

Candidate describe(const CudaLibraryWanted& wanted, const std::string& path) {
    const std::string name = path.substr(path.find_last_of('/') + 1);
    if (wanted.cuda_of == CudaOfLibrary::soname_major) {
        const std::string major = std::to_string(soname_major_of(name, wanted.file_stem));
        return {path, major, name + " (CUDA " + major + ")"};
    }
    const NcclFileVersion version = nccl_file_version(path);
    return {path, version.cuda,
            "NCCL " + (version.nccl.empty() ? "of unknown version" : version.nccl) + " for CUDA " +
                (version.cuda.empty() ? "unknown" : version.cuda)};
}

// Whether a candidate was built for the CUDA major this binary was (unknown counts as a match).
bool cuda_matches(const Candidate& candidate, int cuda_version) {
    return candidate.cuda.empty() || std::atoi(candidate.cuda.c_str()) == cuda_version / 1000;
}

std::string path_of(void* handle) {
    link_map* map = nullptr;
    return dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr
               ? map->l_name
               : "";
}

}  // namespace

std::string process_environment(const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr ? value : "";
}

CudaLibraryFolders cuda_library_folders(const EnvironmentLookup& environment) {
    std::vector<std::string> candidates;
    CudaLibraryFolders result;
    const std::string pinned = environment("MIXGPT_CUDA_LIBRARY_PATH");
    if (!pinned.empty()) {
        candidates = split(pinned, ':');
        result.restricted = true;
    } else {
        candidates = split(environment("LD_LIBRARY_PATH"), ':');
        std::vector<std::string> toolkits;
        if (!environment("CUDA_HOME").empty()) toolkits.push_back(environment("CUDA_HOME"));
        toolkits.push_back("/usr/local/cuda");
        const std::vector<std::string> versioned = glob_paths("/usr/local/cuda-*");
        toolkits.insert(toolkits.end(), versioned.rbegin(), versioned.rend());  // newest first
        for (const std::string& toolkit : toolkits) {
            candidates.push_back(toolkit + "/lib64");
            candidates.push_back(toolkit + "/lib");
        }
        const std::vector<std::string> configured = loader_configured_folders();
        candidates.insert(candidates.end(), configured.begin(), configured.end());
        candidates.insert(candidates.end(), {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64",
                                             "/usr/lib64", "/lib", "/usr/lib"});
        const std::vector<std::string> wheels = python_wheel_folders(environment);
        candidates.insert(candidates.end(), wheels.begin(), wheels.end());
    }
    std::set<std::string> seen;
    for (const std::string& folder : candidates)
        if (is_directory(folder) && seen.insert(real_path(folder)).second) result.folders.push_back(folder);
    return result;
}

NcclFileVersion nccl_file_version(const std::string& path) {
    const std::string text = elf_section(path, ".rodata");
    // NCCL >= 2.19: "NCCL version 2.28.9 compiled with CUDA 13.0"; older: "NCCL version 2.18.5+cuda12.2".
    const char* const kCompiled = " compiled with CUDA ";
    size_t marker = text.find(kCompiled);
    const bool compiled_text = marker != std::string::npos;
    if (!compiled_text) marker = text.find("+cuda");
    if (marker == std::string::npos) return {};
    const size_t line = text.rfind("NCCL version ", marker);
    return {line == std::string::npos ? "" : version_after(text.substr(line, marker - line), "NCCL version "),
            version_after(text.substr(marker), compiled_text ? kCompiled : "+cuda")};
}

CudaLibraryFile find_cuda_library(const CudaLibraryWanted& wanted, const CudaLibraryFolders& folders) {
    const std::string file_name = wanted.file_stem + "." + std::to_string(wanted.soname_major);
    std::vector<Candidate> others;
    for (const std::string& folder : folders.folders) {
        for (const std::string& path : glob_paths(folder + "/" + wanted.file_stem + ".*")) {
            const std::string name = path.substr(path.find_last_of('/') + 1);
            if (!is_file(path) || soname_major_of(name, wanted.file_stem) < 0) continue;
            const bool exact_name = name == file_name;
            if (wanted.cuda_of == CudaOfLibrary::soname_major && !exact_name) {
                if (name.find('.', wanted.file_stem.size() + 1) == std::string::npos)  // the soname only
                    others.push_back(describe(wanted, path));
                continue;
            }
            if (!exact_name) continue;
            const Candidate candidate = describe(wanted, path);
            if (cuda_matches(candidate, wanted.cuda_version)) return {path, candidate.description, ""};
            others.push_back(candidate);
        }
    }
    const std::string built = "this binary was built with CUDA " + cuda_text(wanted.cuda_version);
    if (!others.empty()) {
        std::string found;
        for (size_t i = 0; i < others.size() && i < 3; ++i)
            found += (i > 0 ? "; " : "") + others[i].description + " at " + others[i].path;
        if (others.size() > 3) found += "; and " + std::to_string(others.size() - 3) + " more";
        return {"", "",
                wanted.title + ": " + built + " and needs " + file_name + " for CUDA " +
                    std::to_string(wanted.cuda_version / 1000) + ", but found only " + found +
                    ": install CUDA " + std::to_string(wanted.cuda_version / 1000) + "'s " + wanted.title +
                    " (or PyTorch's wheel of it) or use a mixgpt built for the CUDA found"};
    }
    return {"", "",
            wanted.title + ": " + file_name + " not found (" + built + ") in " +
                std::to_string(folders.folders.size()) + " folders" +
                (folders.restricted ? " of MIXGPT_CUDA_LIBRARY_PATH"
                                    : " (LD_LIBRARY_PATH, CUDA_HOME, /usr/local/cuda*, the loader's, "
                                      "PyTorch's nvidia/*/lib)") +
                ": install it, or name its folder in MIXGPT_CUDA_LIBRARY_PATH"};
}

LoadedCudaLibrary::LoadedCudaLibrary(const CudaLibraryWanted& wanted) : title_(wanted.title) {
    const CudaLibraryFolders folders = cuda_library_folders();
    const CudaLibraryFile file = find_cuda_library(wanted, folders);
    const std::string file_name = wanted.file_stem + "." + std::to_string(wanted.soname_major);
    if (!file.path.empty()) {
        handle_ = dlopen(file.path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle_ == nullptr)
            throw Error(wanted.title + ": cannot load " + file.path + " (" + file.description +
                        "): " + dlerror());
    } else if (!folders.restricted) {
        // The loader's cache may know a folder the search does not; its copy must match too.
        handle_ = dlopen(file_name.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle_ != nullptr && !cuda_matches(describe(wanted, path_of(handle_)), wanted.cuda_version)) {
            dlclose(handle_);
            handle_ = nullptr;
        }
    }
    if (handle_ == nullptr) throw Error(file.failure);
    path_ = path_of(handle_);
}

void* LoadedCudaLibrary::symbol(const char* name) const {
    void* address = dlsym(handle_, name);
    if (address == nullptr) throw Error(title_ + ": " + path_ + " has no " + name + " (" + dlerror() + ")");
    return address;
}

}  // namespace mixgpt
