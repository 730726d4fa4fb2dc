// H5_CHECK: HDF5 calls return a negative value (herr_t or hid_t) on failure.
#pragma once

#include <hdf5.h>

#include <string>

#include "core/error.h"

namespace mixgpt {
// The innermost message of HDF5's error stack, or a generic text when it is empty.
std::string hdf5_error_message();
}  // namespace mixgpt

#define MIXGPT_H5_OK(status) ((status) >= 0)
#define MIXGPT_H5_MESSAGE(status) ::mixgpt::hdf5_error_message()
#define H5_CHECK(call) MIXGPT_CHECK_GEN(call, "HDF5", MIXGPT_H5_OK, MIXGPT_H5_MESSAGE)
