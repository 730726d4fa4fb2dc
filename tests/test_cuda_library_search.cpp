// core/cuda_library_search.h: where cuBLASLt and NCCL are looked for, and the one-line errors when
// only another CUDA's copy is there. Fake folder trees and files stand in for toolkits and wheels:
// the search reads names and, for NCCL, the text in an ELF file's .rodata; nothing is loaded.
#include <elf.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include "core/cuda_library_search.h"
#include "tests/test_support.h"

namespace mixgpt {
namespace {

const CudaLibraryWanted kCublasLt13{"cuBLASLt", "libcublasLt.so", 13, 13000, CudaOfLibrary::soname_major};
const CudaLibraryWanted kNccl2ForCuda13{"NCCL", "libnccl.so", 2, 13000, CudaOfLibrary::nccl_text};

// A minimal ELF64 file whose .rodata holds `text` (what nccl_file_version reads of a libnccl).
std::string elf_with_rodata(const std::string& text) {
    const std::string names = std::string("\0.rodata\0.shstrtab\0", 19);
    Elf64_Ehdr header{};
    std::memcpy(header.e_ident, ELFMAG, SELFMAG);
    header.e_ident[EI_CLASS] = ELFCLASS64;
    header.e_ident[EI_DATA] = ELFDATA2LSB;
    header.e_ident[EI_VERSION] = EV_CURRENT;
    header.e_type = ET_DYN;
    header.e_machine = EM_X86_64;
    header.e_version = EV_CURRENT;
    header.e_ehsize = sizeof(Elf64_Ehdr);
    header.e_shentsize = sizeof(Elf64_Shdr);
    header.e_shnum = 3;
    header.e_shstrndx = 2;
    header.e_shoff = sizeof(Elf64_Ehdr) + text.size() + names.size();
    Elf64_Shdr sections[3]{};
    sections[1].sh_name = 1;  // ".rodata"
    sections[1].sh_type = SHT_PROGBITS;
    sections[1].sh_offset = sizeof(Elf64_Ehdr);
    sections[1].sh_size = text.size();
    sections[2].sh_name = 9;  // ".shstrtab"
    sections[2].sh_type = SHT_STRTAB;
    sections[2].sh_offset = sizeof(Elf64_Ehdr) + text.size();
    sections[2].sh_size = names.size();
    return std::string(reinterpret_cast<const char*>(&header), sizeof header) + text + names +
           std::string(reinterpret_cast<const char*>(sections), sizeof sections);
}

std::string nccl_file(const std::string& nccl, const std::string& cuda) {
    const std::string nul(1, '\0');
    return elf_with_rodata(nul + "NCCL version %s" + nul + "NCCL version " + nccl + " compiled with CUDA " +
                           cuda + "\n" + nul);
}

EnvironmentLookup environment_of(const std::map<std::string, std::string>& values) {
    return [values](const char* name) {
        const auto found = values.find(name);
        return found != values.end() ? found->second : std::string();
    };
}

CudaLibraryFolders folders_of(std::vector<std::string> folders) { return {std::move(folders), true}; }

TEST(CudaLibrarySearch, FoldersComeFromTheEnvironmentAndPythonWheels) {
    const test::TempDirectory root("mixgpt_library_search");
    root.write("ld/.keep", "");
    root.write("cuda/lib64/.keep", "");
    root.write("venv/bin/python3", "");
    root.write("venv/lib/python3.12/site-packages/nvidia/cu13/lib/.keep", "");
    root.write("venv/lib/python3.12/site-packages/nvidia/nccl/lib/.keep", "");
    const CudaLibraryFolders found = cuda_library_folders(environment_of({
        {"LD_LIBRARY_PATH", root.file("ld") + ":" + root.file("missing")},
        {"CUDA_HOME", root.file("cuda")},
        {"PATH", root.file("venv/bin")},
    }));
    EXPECT_FALSE(found.restricted);
    ASSERT_GE(found.folders.size(), 4u);
    EXPECT_EQ(found.folders[0], root.file("ld"));  // LD_LIBRARY_PATH first, as the loader has it
    EXPECT_EQ(found.folders[1], root.file("cuda/lib64"));
    const auto position = [&](const std::string& folder) {
        return std::find(found.folders.begin(), found.folders.end(), root.file(folder)) -
               found.folders.begin();
    };
    EXPECT_LT(position("venv/lib/python3.12/site-packages/nvidia/cu13/lib"), found.folders.size());
    EXPECT_LT(position("venv/lib/python3.12/site-packages/nvidia/nccl/lib"), found.folders.size());
    EXPECT_EQ(position("missing"), static_cast<long>(found.folders.size()));  // only folders that exist
}

TEST(CudaLibrarySearch, MixgptCudaLibraryPathIsTheOnlyPlaceSearchedWhenSet) {
    const test::TempDirectory root("mixgpt_library_search");
    root.write("pinned/.keep", "");
    root.write("ld/.keep", "");
    const CudaLibraryFolders found = cuda_library_folders(environment_of({
        {"MIXGPT_CUDA_LIBRARY_PATH", root.file("pinned") + ":" + root.file("missing")},
        {"LD_LIBRARY_PATH", root.file("ld")},
    }));
    EXPECT_TRUE(found.restricted);
    EXPECT_EQ(found.folders, std::vector<std::string>{root.file("pinned")});
}

TEST(CudaLibrarySearch, CublasLtOfTheBuildsToolkitIsFoundPastAnotherMajor) {
    const test::TempDirectory root("mixgpt_library_search");
    root.write("cuda12/libcublasLt.so.12", "");
    root.write("cuda12/libcublasLt.so.12.4.5.8", "");
    root.write("cuda13/libcublasLt.so.13", "");
    const CudaLibraryFile found =
        find_cuda_library(kCublasLt13, folders_of({root.file("cuda12"), root.file("cuda13")}));
    EXPECT_EQ(found.path, root.file("cuda13/libcublasLt.so.13"));
    EXPECT_EQ(found.failure, "");
}

TEST(CudaLibrarySearch, OnlyAnotherMajorOfCublasLtIsOneLineNamingBothVersions) {
    const test::TempDirectory root("mixgpt_library_search");
    root.write("cuda12/libcublasLt.so.12", "");
    root.write("cuda12/libcublasLt.so.12.4.5.8", "");  // the file behind the soname: counted once
    const CudaLibraryFile found = find_cuda_library(kCublasLt13, folders_of({root.file("cuda12")}));
    EXPECT_EQ(found.path, "");
    EXPECT_EQ(
        found.failure,
        "cuBLASLt: this binary was built with CUDA 13.0 and needs libcublasLt.so.13 for CUDA 13, but found "
        "only libcublasLt.so.12 (CUDA 12) at " +
            root.file("cuda12/libcublasLt.so.12") +
            ": install CUDA 13's cuBLASLt (or PyTorch's wheel of it) or use a mixgpt built for the CUDA "
            "found");
}

TEST(CudaLibrarySearch, NothingFoundSaysWhereItLooked) {
    const test::TempDirectory root("mixgpt_library_search");
    const CudaLibraryFile found = find_cuda_library(kCublasLt13, folders_of({root.path()}));
    EXPECT_EQ(found.failure,
              "cuBLASLt: libcublasLt.so.13 not found (this binary was built with CUDA 13.0) in 1 folders of "
              "MIXGPT_CUDA_LIBRARY_PATH: install it, or name its folder in MIXGPT_CUDA_LIBRARY_PATH");
}

TEST(CudaLibrarySearch, NcclVersionAndCudaAreReadFromItsRodata) {
    const test::TempDirectory root("mixgpt_library_search");
    const NcclFileVersion version =
        nccl_file_version(root.write("libnccl.so.2", nccl_file("2.21.5", "12.4")));
    EXPECT_EQ(version.nccl, "2.21.5");
    EXPECT_EQ(version.cuda, "12.4");
    const NcclFileVersion older =
        nccl_file_version(root.write("old/libnccl.so.2", elf_with_rodata("NCCL version 2.18.5+cuda12.2\n")));
    EXPECT_EQ(older.nccl, "2.18.5");
    EXPECT_EQ(older.cuda, "12.2");
    const NcclFileVersion none =
        nccl_file_version(root.write("text/libnccl.so.2", "NCCL version 2.1 compiled"));
    EXPECT_EQ(none.nccl, "");  // not an ELF file
}

TEST(CudaLibrarySearch, NcclBuiltForAnotherCudaIsPassedOverOrNamed) {
    const test::TempDirectory root("mixgpt_library_search");
    root.write("wheel12/libnccl.so.2", nccl_file("2.21.5", "12.4"));
    const CudaLibraryFile only_other = find_cuda_library(kNccl2ForCuda13, folders_of({root.file("wheel12")}));
    EXPECT_EQ(
        only_other.failure,
        "NCCL: this binary was built with CUDA 13.0 and needs libnccl.so.2 for CUDA 13, but found only NCCL "
        "2.21.5 for CUDA 12.4 at " +
            root.file("wheel12/libnccl.so.2") +
            ": install CUDA 13's NCCL (or PyTorch's wheel of it) or use a mixgpt built for the CUDA found");
    root.write("wheel13/libnccl.so.2", nccl_file("2.28.9", "13.0"));
    const CudaLibraryFile found =
        find_cuda_library(kNccl2ForCuda13, folders_of({root.file("wheel12"), root.file("wheel13")}));
    EXPECT_EQ(found.path, root.file("wheel13/libnccl.so.2"));
    EXPECT_EQ(found.description, "NCCL 2.28.9 for CUDA 13.0");
}

TEST(CudaLibrarySearch, OpeningWhatIsHiddenThrowsTheReason) {
    const test::TempDirectory empty("mixgpt_library_search");
    const std::string folder = empty.path();
    const test::ScopedEnvironment hidden(
        {{"MIXGPT_CUDA_LIBRARY_PATH", folder.c_str()}, {"LD_LIBRARY_PATH", nullptr}});
    EXPECT_EQ(test::error_of([] { LoadedCudaLibrary{kNccl2ForCuda13}; }),
              "NCCL: libnccl.so.2 not found (this binary was built with CUDA 13.0) in 1 folders of "
              "MIXGPT_CUDA_LIBRARY_PATH: install it, or name its folder in MIXGPT_CUDA_LIBRARY_PATH");
}

}  // namespace
}  // namespace mixgpt
