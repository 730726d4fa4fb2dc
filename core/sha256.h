// SHA-256 (through OpenSSL's libcrypto) of bytes and of files, as lowercase hex.
#pragma once

#include <string>

namespace mixgpt {

std::string sha256_hex(const void* data, size_t bytes);
std::string sha256_file_hex(const std::string& path);  // throws Error if unreadable

}  // namespace mixgpt
