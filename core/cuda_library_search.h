// Where mixgpt finds the CUDA libraries it loads on first use (cuBLASLt in kernels/cuda/
// cublaslt_library.cpp, NCCL in kernels/cuda/nccl_library.cpp), so that no binary links them:
// each binary starts without them, and only the work that needs one asks for it.
//
// A library must match the CUDA toolkit this binary was built with: libcublasLt.so.13 for a CUDA
// 13 build, .so.12 for CUDA 12 (the soname's major is the toolkit's); NCCL's soname is its own
// (libnccl.so.2), so the CUDA it was compiled for is read from the text NCCL embeds in its
// .rodata ("NCCL version 2.28.9 compiled with CUDA 13.0"). Only another CUDA's copy found is a
// one-line error naming both versions.
//
// The folders, in order: with MIXGPT_CUDA_LIBRARY_PATH set, its folders and nothing else (to pin
// one toolkit, or to hide one); otherwise LD_LIBRARY_PATH, $CUDA_HOME/lib64 and lib,
// /usr/local/cuda/lib64 and lib, /usr/local/cuda-*/lib64 and lib, the loader's configured
// folders (/etc/ld.so.conf.d) and the system's, then PyTorch's wheels: the nvidia/*/lib folders
// of the site-packages of every python3 on PATH, of $VIRTUAL_ENV, $CONDA_PREFIX,
// /opt/torch/.venv, /usr/local, /usr and ~/.local. No Python is run.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace mixgpt {

// How to tell which CUDA a candidate file was built for.
enum class CudaOfLibrary {
    soname_major,  // the soname's major is the toolkit's (libcublasLt.so.12: CUDA 12)
    nccl_text,     // NCCL's embedded "compiled with CUDA X.Y"
};

struct CudaLibraryWanted {
    std::string title;      // for messages: "cuBLASLt"
    std::string file_stem;  // "libcublasLt.so"
    int soname_major = 0;   // the file is file_stem + "." + soname_major
    int cuda_version = 0;   // the toolkit this binary was built with, as CUDART_VERSION: 13000
    CudaOfLibrary cuda_of = CudaOfLibrary::soname_major;
};

// The value of an environment variable, "" when unset (replaceable by tests).
using EnvironmentLookup = std::function<std::string(const char* name)>;
std::string process_environment(const char* name);

// The existing folders above, in order, each once (by real path). `restricted` is set when
// MIXGPT_CUDA_LIBRARY_PATH chose them.
struct CudaLibraryFolders {
    std::vector<std::string> folders;
    bool restricted = false;
};
CudaLibraryFolders cuda_library_folders(const EnvironmentLookup& environment = process_environment);

// The first matching file in `folders`, or the one-line reason there is none. `description`
// says what the file is ("libcublasLt.so.13", "NCCL 2.28.9 for CUDA 13.0").
struct CudaLibraryFile {
    std::string path;
    std::string description;
    std::string failure;  // empty when `path` was found
};
CudaLibraryFile find_cuda_library(const CudaLibraryWanted& wanted, const CudaLibraryFolders& folders);

// NCCL's own version and CUDA version from a libnccl file's .rodata: {"2.28.9", "13.0"}; empty
// strings where the file is no ELF or holds no such text.
struct NcclFileVersion {
    std::string nccl, cuda;
};
NcclFileVersion nccl_file_version(const std::string& path);

// A library found by find_cuda_library and dlopen()ed (RTLD_NOW | RTLD_LOCAL) when constructed.
// Unless the folders are restricted, a library none of them holds is asked of the loader by its
// soname last (its cache may know more folders; only cuBLASLt, whose soname says its CUDA). The
// constructor throws Error with one line when nothing fits or it cannot be loaded. Users keep one
// in a function-local static, so the library is opened on the first call that needs it.
class LoadedCudaLibrary {
public:
    explicit LoadedCudaLibrary(const CudaLibraryWanted& wanted);
    const std::string& path() const { return path_; }  // the file loaded
    // The address of `name`; throws Error "<title>: <path> has no <name> (<dlerror>)".
    void* symbol(const char* name) const;

private:
    std::string title_;
    std::string path_;
    void* handle_ = nullptr;
};

}  // namespace mixgpt
