// Progress display when stderr is not a terminal (as under CI): plain lines, rate, ETA, fields.
#include <gtest/gtest.h>

#include <string>

#include "core/progress.h"

namespace mixgpt {
namespace {

TEST(Progress, PrintsPlainLinesWithRateEtaAndFieldsWhenNotATerminal) {
    testing::internal::CaptureStderr();
    {
        Progress progress("encode", 100.0, "MB", 0.0);
        progress.update(25.0, "docs 7");
        progress.finish("done");
    }
    const std::string output = testing::internal::GetCapturedStderr();
    EXPECT_EQ(output.find('\r'), std::string::npos) << "no terminal redraws in a log";
    EXPECT_NE(output.find("encode: 25.0/100.0 MB (25%)"), std::string::npos) << output;
    EXPECT_NE(output.find("MB/s"), std::string::npos);
    EXPECT_NE(output.find("ETA"), std::string::npos);
    EXPECT_NE(output.find("docs 7"), std::string::npos);
    EXPECT_NE(output.find("done"), std::string::npos);
}

TEST(Progress, FormatsDurations) {
    EXPECT_EQ(format_duration(12.4), "12s");
    EXPECT_EQ(format_duration(187), "3m07s");
    EXPECT_EQ(format_duration(3720), "1h02m");
    EXPECT_EQ(format_duration(-5), "0s");
}

}  // namespace
}  // namespace mixgpt
