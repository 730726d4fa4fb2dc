// HDF5 helpers, write-then-rename outputs and SHA-256 (core/). Temporaries and user-named outputs:
// test_core_owned_temporary.cpp, test_core_output_file.cpp.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/h5.h"
#include "core/output_file.h"
#include "core/sha256.h"
#include "tests/test_support.h"

namespace mixgpt {
namespace {

using test::TempDirectory;

TEST(H5, WritesAndReadsDatasetsAndAttributes) {
    TempDirectory dir;
    const std::string path = dir.file("a.h5");
    {
        h5::File file = h5::File::create(path);
        file.create_group("/g");
        const std::vector<float> values = {1.5f, -2.f, 3.25f, 4.f, 5.f, 6.f};
        file.write("/g/x", h5::Type::f32, values.data(), {2, 3});
        file.create_extendible("/g/tokens", h5::Type::u16, 4);
        const std::vector<uint16_t> first = {1, 2, 3}, second = {4, 5, 6, 7, 8};
        file.append("/g/tokens", h5::Type::u16, first.data(), 3);
        file.append("/g/tokens", h5::Type::u16, second.data(), 5);
        file.set_attribute("/", "count", int64_t{42});
        file.set_attribute("/g", "ratio", 0.25);
        file.set_attribute("/", "name", std::string("kjv"));
    }
    h5::File file = h5::File::open_read(path);
    EXPECT_EQ(file.shape("/g/x"), (std::vector<int64_t>{2, 3}));
    std::vector<double> x(6);
    file.read("/g/x", h5::Type::f64, x.data(), 6);
    EXPECT_EQ(x[2], 3.25);
    EXPECT_EQ(file.stored_type("/g/tokens"), h5::Type::u16);
    std::vector<int32_t> tokens(4);
    file.read_range("/g/tokens", h5::Type::i32, tokens.data(), 2, 4);
    EXPECT_EQ(tokens, (std::vector<int32_t>{3, 4, 5, 6}));
    EXPECT_EQ(file.attribute_int("/", "count"), 42);
    EXPECT_EQ(file.attribute_double("/g", "ratio"), 0.25);
    EXPECT_EQ(file.attribute_string("/", "name"), "kjv");
    EXPECT_TRUE(file.exists("/g/x"));
    EXPECT_FALSE(file.exists("/missing/x"));
    EXPECT_THROW(file.read("/g/x", h5::Type::f64, x.data(), 5), Error);
    EXPECT_THROW(file.attribute_int("/", "absent"), Error);
}

TEST(H5, RefusesMissingNonHdf5AndTruncatedFilesNamingThem) {
    TempDirectory dir;
    const std::string missing = dir.file("missing.h5");
    try {
        h5::File::open_read(missing);
        FAIL() << "no error for a missing file";
    } catch (const Error& error) {
        EXPECT_NE(std::string(error.what()).find(missing), std::string::npos);
    }
    const std::string text = dir.file("text.h5");
    std::ofstream(text) << "not hdf5 at all";
    EXPECT_THROW(h5::File::open_read(text), Error);

    const std::string whole = dir.file("whole.h5");
    {
        h5::File file = h5::File::create(whole);
        std::vector<float> values(4096, 1.f);
        file.write("/x", h5::Type::f32, values.data(), {4096});
    }
    const auto size = std::filesystem::file_size(whole);
    for (uintmax_t cut : {uintmax_t{100}, size / 2, size - 1}) {
        const std::string truncated = dir.file("cut.h5");
        std::filesystem::copy_file(whole, truncated, std::filesystem::copy_options::overwrite_existing);
        std::filesystem::resize_file(truncated, cut);
        EXPECT_THROW(
            {
                h5::File file = h5::File::open_read(truncated);
                std::vector<float> values(4096);
                file.read("/x", h5::Type::f32, values.data(), 4096);
            },
            Error)
            << "cut at " << cut;
    }
}

TEST(AtomicOutput, CommitRenamesAndAbandonRemovesTemporary) {
    TempDirectory dir;
    const std::string target = dir.file("out.bin");
    std::string temporary;
    {
        AtomicOutput output(target);
        temporary = output.temporary_path();
        std::ofstream(temporary) << "partial";
    }
    EXPECT_FALSE(file_exists(temporary));
    EXPECT_FALSE(file_exists(target));
    {
        AtomicOutput output(target);
        std::ofstream(output.temporary_path()) << "complete";
        output.commit();
        EXPECT_FALSE(file_exists(output.temporary_path()));
    }
    std::ifstream input(target);
    std::string content;
    input >> content;
    EXPECT_EQ(content, "complete");
}

TEST(AtomicOutput, WriteWholeFileIsCompleteOrAbsent) {
    TempDirectory dir;
    write_whole_file(dir.file("a.json"), "{}\n");
    std::ifstream input(dir.file("a.json"));
    std::string content;
    input >> content;
    EXPECT_EQ(content, "{}");
    const std::string message = test::error_of([&] { write_whole_file(dir.file("missing/a.json"), "{}"); });
    EXPECT_NE(message.find(dir.file("missing/a.json")), std::string::npos) << message;
    EXPECT_FALSE(file_exists(dir.file("missing")));
}

TEST(Sha256, MatchesKnownVectorsAndFiles) {
    // FIPS 180-2 example "abc".
    EXPECT_EQ(sha256_hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    TempDirectory dir;
    const std::string path = dir.file("abc.txt");
    std::ofstream(path, std::ios::binary) << "abc";
    EXPECT_EQ(sha256_file_hex(path), sha256_hex("abc", 3));
    EXPECT_THROW(sha256_file_hex(dir.file("none")), Error);
}

}  // namespace
}  // namespace mixgpt
