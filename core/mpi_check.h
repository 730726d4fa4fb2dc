// MPI_CHECK: MPI calls return MPI_SUCCESS or an error code with a text.
#pragma once

#include <mpi.h>

#include <string>

#include "core/error.h"

namespace mixgpt {
inline std::string mpi_error_message(int code) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    return std::string(text, static_cast<size_t>(length));
}
}  // namespace mixgpt

#define MIXGPT_MPI_OK(status) ((status) == MPI_SUCCESS)
#define MPI_CHECK(call) MIXGPT_CHECK_GEN(call, "MPI", MIXGPT_MPI_OK, ::mixgpt::mpi_error_message)
