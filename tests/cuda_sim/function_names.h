// The names of the kernels, for cudaFuncGetName: the simulator's kernels are the host functions
// of the .cu files, most in anonymous namespaces (local symbols, which dladdr does not see), so
// their names come from the executable's own symbol table (.symtab of /proc/self/exe).
#pragma once

namespace mixgpt::cuda_sim {

// The mangled name of the function that starts at `address`, or nullptr if the symbol table
// (read once) has none there.
const char* function_name(const void* address);

}  // namespace mixgpt::cuda_sim
