#include "core/sha256.h"

#include <openssl/evp.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "core/error.h"

namespace mixgpt {
namespace {

struct DigestContextDeleter {
    void operator()(EVP_MD_CTX* context) const { EVP_MD_CTX_free(context); }
};
using DigestContext = std::unique_ptr<EVP_MD_CTX, DigestContextDeleter>;

DigestContext start_sha256() {
    DigestContext context(EVP_MD_CTX_new());
    if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1)
        throw Error("OpenSSL: cannot initialise SHA-256");
    return context;
}

std::string finish_hex(EVP_MD_CTX* context) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(context, digest, &length) != 1) throw Error("OpenSSL: SHA-256 failed");
    static const char kHex[] = "0123456789abcdef";
    std::string hex;
    for (unsigned int i = 0; i < length; ++i) {
        hex += kHex[digest[i] >> 4];
        hex += kHex[digest[i] & 15];
    }
    return hex;
}

}  // namespace

std::string sha256_hex(const void* data, size_t bytes) {
    DigestContext context = start_sha256();
    EVP_DigestUpdate(context.get(), data, bytes);
    return finish_hex(context.get());
}

std::string sha256_file_hex(const std::string& path) {
    std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!file) throw Error(path + ": cannot open for reading");
    DigestContext context = start_sha256();
    std::vector<unsigned char> chunk(1 << 20);
    size_t got = 0;
    while ((got = std::fread(chunk.data(), 1, chunk.size(), file.get())) > 0)
        EVP_DigestUpdate(context.get(), chunk.data(), got);
    if (std::ferror(file.get())) throw Error(path + ": read error");
    return finish_hex(context.get());
}

}  // namespace mixgpt
