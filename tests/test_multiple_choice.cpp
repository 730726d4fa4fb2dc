// Multiple-choice tasks without a model: parsing both formats (and the one-line errors of bad
// lines), plain, gzip and zstd task files, rows (leading space, empty context, cut from the left,
// shared rows of identical choices), the batch plan, the counts and the Wilson interval.
#include <gtest/gtest.h>
#include <zstd.h>

#include <algorithm>
#include <set>

#include "core/error.h"
#include "eval/multiple_choice.h"
#include "eval/multiple_choice_file.h"
#include "eval/multiple_choice_scoring.h"
#include "tests/test_support.h"
#include "tests/test_tokenizer_support.h"

namespace mixgpt {
namespace {

using test::error_of;
using test::TempDirectory;

std::string zstd_compressed(const std::string& text) {
    std::string out(ZSTD_compressBound(text.size()), '\0');
    const size_t size = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3);
    EXPECT_FALSE(ZSTD_isError(size));
    out.resize(size);
    return out;
}

std::vector<std::string> read_lines(const std::string& path) {
    TaskFileLines lines(path);
    std::vector<std::string> all;
    for (std::string line; lines.next(line);) all.push_back(line);
    return all;
}

const char* const kHellaswagLine =
    R"({"ind": 24, "ctx": "A man is sitting on a roof. he", "endings": ["is using wrap.", "is ripping tiles off.", )"
    R"("is holding a cube.", "starts pulling up roofing."], "label": 3, "split": "val"})";

TEST(MultipleChoiceParse, HellaswagLine) {
    const ChoiceExample example = parse_choice_example(kHellaswagLine, TaskFormat::hellaswag, 7);
    EXPECT_EQ(example.id, "24");
    EXPECT_EQ(example.context, "A man is sitting on a roof. he");
    ASSERT_EQ(example.choices.size(), 4u);
    EXPECT_EQ(example.choices[1], "is ripping tiles off.");
    EXPECT_EQ(example.label, 3);
    // Hugging Face's copy writes the label as a string.
    const ChoiceExample string_label = parse_choice_example(
        R"({"ctx": "", "endings": ["a", "b", "c", "d"], "label": "2"})", TaskFormat::hellaswag, 9);
    EXPECT_EQ(string_label.label, 2);
    EXPECT_EQ(string_label.id, "9");  // no "ind": the line number
}

TEST(MultipleChoiceParse, McLineWithAnyNumberOfChoices) {
    const ChoiceExample example = parse_choice_example(
        R"({"id": "q1", "context": "Two and two make", "choices": [" four", "five", "six", "x", "y"], "label": 0})",
        TaskFormat::mc, 1);
    EXPECT_EQ(example.id, "q1");
    EXPECT_EQ(example.choices.size(), 5u);
    EXPECT_EQ(example.label, 0);
}

TEST(MultipleChoiceParse, BadLinesNameTheField) {
    const struct {
        TaskFormat format;
        const char* line;
        const char* message;
    } cases[] = {
        {TaskFormat::hellaswag, "{\"ctx\": \"a\", ", "not JSON (syntax error at byte"},
        {TaskFormat::hellaswag, "[1, 2]", "expected a JSON object, found array"},
        {TaskFormat::hellaswag, R"({"endings": ["a","b","c","d"], "label": 0})", "ctx: missing"},
        {TaskFormat::hellaswag, R"({"ctx": 5, "endings": ["a","b","c","d"], "label": 0})",
         "ctx: expected a string, found number"},
        {TaskFormat::hellaswag, R"({"ctx": "x", "endings": ["a","b","c"], "label": 0})",
         "endings: expected an array of 4 strings, found 3 elements"},
        {TaskFormat::hellaswag, R"({"ctx": "x", "endings": "abcd", "label": 0})",
         "endings: expected an array of 4 strings, found string"},
        {TaskFormat::hellaswag, R"({"ctx": "x", "endings": ["a","b",3,"d"], "label": 0})",
         "endings[2]: expected a string, found number"},
        {TaskFormat::hellaswag, R"({"ctx": "x", "endings": ["a","b","c","d"]})", "label: missing"},
        {TaskFormat::hellaswag, R"({"ctx": "x", "endings": ["a","b","c","d"], "label": 4})",
         "label: 4 is not the index of one of the 4 choices"},
        {TaskFormat::hellaswag, R"({"ctx": "x", "endings": ["a","b","c","d"], "label": "one"})",
         "label: expected an integer, found the string \"one\""},
        {TaskFormat::hellaswag, R"({"ctx": "x", "endings": ["a","b","c","d"], "label": 1.5})",
         "label: expected an integer, found number"},
        {TaskFormat::mc, R"({"context": "x", "choices": ["only"], "label": 0})",
         "choices: expected an array of 2 or more strings, found 1 elements"},
        {TaskFormat::mc, R"({"ctx": "x", "choices": ["a", "b"], "label": 0})", "context: missing"},
        {TaskFormat::mc, R"({"context": "x", "choices": ["a", "b"], "label": -1})",
         "label: -1 is not the index of one of the 2 choices"},
    };
    for (const auto& c : cases)
        EXPECT_EQ(error_of([&] { parse_choice_example(c.line, c.format, 1); }).rfind(c.message, 0), 0u)
            << c.line << " -> " << error_of([&] { parse_choice_example(c.line, c.format, 1); });
}

TEST(MultipleChoiceFile, PlainGzipAndZstdGiveTheSameLines) {
    TempDirectory directory("mixgpt_mc_file");
    std::string text;
    for (int i = 0; i < 3000; ++i) text += "line " + std::to_string(i) + (i % 7 == 0 ? "\r\n" : "\n");
    text += "last line without a newline";
    const std::string plain = directory.write("task.jsonl", text);
    testing::write_gzip(directory.file("task.jsonl.gz"), text);
    // Two zstd frames one after the other, as `cat a.zst b.zst` makes; the name says nothing.
    const std::string zstd = directory.write(
        "task.data", zstd_compressed(text.substr(0, 10000)) + zstd_compressed(text.substr(10000)));
    const std::vector<std::string> expected = read_lines(plain);
    ASSERT_EQ(expected.size(), 3001u);
    EXPECT_EQ(expected[7], "line 7");  // "\r\n" ends a line too
    EXPECT_EQ(expected.back(), "last line without a newline");
    EXPECT_EQ(read_lines(directory.file("task.jsonl.gz")), expected);
    EXPECT_EQ(read_lines(zstd), expected);
    EXPECT_TRUE(read_lines(directory.write("empty.jsonl", "")).empty());
}

TEST(MultipleChoiceFile, DamagedZstdAndGzipAreErrors) {
    TempDirectory directory("mixgpt_mc_file");
    std::string text;
    for (int i = 0; i < 2000; ++i) text += "{\"line\": " + std::to_string(i) + "}\n";
    const std::string compressed = zstd_compressed(text);
    const std::string truncated =
        directory.write("truncated.zst", compressed.substr(0, compressed.size() / 2));
    EXPECT_NE(error_of([&] { read_lines(truncated); }).find(truncated + ": truncated zstd data"),
              std::string::npos);
    std::string corrupt = compressed;
    corrupt[4] = static_cast<char>(corrupt[4] | 0x08);  // the frame header's reserved bit, which must be 0
    const std::string corrupt_path = directory.write("corrupt.zst", corrupt);
    EXPECT_NE(error_of([&] { read_lines(corrupt_path); }).find(corrupt_path + ": corrupt zstd data"),
              std::string::npos);
    testing::write_gzip(directory.file("whole.gz"), text);
    const std::string gzip = testing::read_file(directory.file("whole.gz"));
    const std::string cut_gzip = directory.write("cut.gz", gzip.substr(0, gzip.size() / 2));
    EXPECT_NE(error_of([&] { read_lines(cut_gzip); }).find("truncated gzip data"), std::string::npos);
    EXPECT_NE(error_of([&] {
                  TaskFileLines absent(directory.file("absent.jsonl"));
              }).find(directory.file("absent.jsonl") + ": cannot open"),
              std::string::npos);
}

std::string mc_line(const std::string& context, const std::vector<std::string>& choices, int label) {
    std::string line = "{\"context\": \"" + context + "\", \"choices\": [";
    for (size_t i = 0; i < choices.size(); ++i) line += (i ? ", \"" : "\"") + choices[i] + "\"";
    return line + "], \"label\": " + std::to_string(label) + "}\n";
}

TEST(MultipleChoiceLoad, BadLinesFailWithPathAndLineOrAreSkippedAndCounted) {
    TempDirectory directory("mixgpt_mc_load");
    const std::string path = directory.write(
        "task.jsonl", mc_line("one", {"a", "b"}, 0) + "\n   \n" + mc_line("two", {"c", "d"}, 1) +
                          "{\"context\": \"three\", \"choices\": [\"e\"], \"label\": 0}\n" + "not json\n" +
                          mc_line("four", {"f", "g", "h"}, 2));
    TaskLoadOptions options;
    options.format = TaskFormat::mc;
    options.window = 64;
    const Tokenizer& tokenizer = testing::tiny_tokenizer();
    EXPECT_EQ(error_of([&] { load_choice_task(path, options, tokenizer); }),
              path + ":5: choices: expected an array of 2 or more strings, found 1 elements");
    options.limit = 2;  // stops before the bad line
    const ChoiceTask first_two = load_choice_task(path, options, tokenizer);
    ASSERT_EQ(first_two.examples.size(), 2u);
    EXPECT_EQ(first_two.examples[1].line, 4);  // blank lines count as lines, not examples
    EXPECT_EQ(first_two.examples[1].id, "4");
    options.limit = 0;
    options.skip_bad_lines = true;
    const ChoiceTask skipping = load_choice_task(path, options, tokenizer);
    EXPECT_EQ(skipping.examples.size(), 3u);
    EXPECT_EQ(skipping.skipped_lines, 2);
    EXPECT_EQ(skipping.examples.back().line, 7);
    const std::string bad_only = directory.write("bad.jsonl", "nothing\n");
    EXPECT_EQ(error_of([&] { load_choice_task(bad_only, options, tokenizer); }),
              bad_only + ": no examples (every line was skipped)");
    options.format = TaskFormat::hellaswag;
    options.skip_bad_lines = false;
    EXPECT_EQ(error_of([&] { load_choice_task(path, options, tokenizer); }), path + ":1: ctx: missing");
}

TEST(MultipleChoiceRows, LeadingSpaceEmptyContextSharedRowsAndCutFromTheLeft) {
    const Tokenizer& tokenizer = testing::tiny_tokenizer();
    ChoiceExample example;
    example.context = "The quick brown fox jumps over the lazy dog, and then it runs far away";
    example.choices = {"home.", "the", "home.", "to the river and back again"};
    example.label = 0;
    const int window = 20;
    const EncodedExample encoded = encode_choice_example(example, TaskFormat::mc, 5, tokenizer, window);
    EXPECT_EQ(encoded.context, tokenizer.encode(example.context));
    for (size_t c = 0; c < 4; ++c) EXPECT_EQ(encoded.choices[c], tokenizer.encode(" " + example.choices[c]));
    EXPECT_EQ(encoded.row_of_choice, (std::vector<int>{0, 1, 0, 3}));  // choice 2 repeats choice 0
    const size_t longest = encoded.context.size() + encoded.choices[3].size();
    ASSERT_GT(longest, static_cast<size_t>(window) + 1) << "the context must be longer than the window";
    EXPECT_EQ(encoded.context_cut, static_cast<int>(longest) - (window + 1));
    for (int c = 0; c < 4; ++c) {
        const ChoiceRow row = choice_row(encoded, c, window);
        const std::vector<int32_t>& choice = encoded.choices[static_cast<size_t>(c)];
        std::vector<int32_t> whole = encoded.context;
        whole.insert(whole.end(), choice.begin(), choice.end());
        ASSERT_EQ(row.tokens.size(), std::min<size_t>(whole.size(), window + 1));
        EXPECT_TRUE(std::equal(row.tokens.begin(), row.tokens.end(), whole.end() - row.tokens.size()))
            << "the row must be the end of context + choice";
        EXPECT_EQ(row.tokens.size() - 1 - static_cast<size_t>(row.first_scored), choice.size())
            << "every choice token is a scored target";
    }
    example.context = "";
    const EncodedExample empty = encode_choice_example(example, TaskFormat::mc, 5, tokenizer, window);
    EXPECT_EQ(empty.context, std::vector<int32_t>{tokenizer.eot_id()});
    EXPECT_EQ(choice_row(empty, 1, window).first_scored, 0);
    example.choices[1] = "a choice far too long to fit in a window of twenty tokens, whatever the tokenizer";
    EXPECT_EQ(error_of([&] {
                  encode_choice_example(example, TaskFormat::hellaswag, 5, tokenizer, window);
              }).rfind("endings[1]: ", 0),
              0u);
}

// A task of `counts[i]` distinct choices for example i (no text: the plan reads only the rows).
ChoiceTask task_with_choices(const std::vector<int>& counts) {
    ChoiceTask task;
    for (int count : counts) {
        EncodedExample example;
        for (int c = 0; c < count; ++c) {
            example.choices.push_back({c});
            example.row_of_choice.push_back(c);
        }
        task.examples.push_back(example);
    }
    return task;
}

TEST(MultipleChoicePlan, WholeExamplesPackedLargeOnesAloneEveryRowOnce) {
    const ChoiceTask task = task_with_choices({4, 4, 2, 7, 4, 3, 1, 12, 4});
    const std::vector<std::vector<RowBatch>> units = plan_scoring_units(task, 5);
    std::set<std::pair<int, int>> seen;
    std::vector<std::set<int>> units_of_example(task.examples.size());
    for (size_t u = 0; u < units.size(); ++u)
        for (const RowBatch& batch : units[u]) {
            EXPECT_LE(batch.size(), 5u);
            EXPECT_FALSE(batch.empty());
            for (const RowRef& ref : batch) {
                EXPECT_TRUE(seen.insert({ref.example, ref.choice}).second) << "row scored twice";
                units_of_example[static_cast<size_t>(ref.example)].insert(static_cast<int>(u));
            }
        }
    EXPECT_EQ(seen.size(), 41u);
    for (const std::set<int>& owners : units_of_example) EXPECT_EQ(owners.size(), 1u) << "an example split";
    // In file order: {4}, {4}, {2}, {7: 5 + 2}, {4}, {3, 1}, {12: 5 + 5 + 2}, {4}
    ASSERT_EQ(units.size(), 8u);
    EXPECT_EQ(units[3].size(), 2u);
    EXPECT_EQ(units[5][0].size(), 4u);
    EXPECT_EQ(units[6].size(), 3u);
    EXPECT_THROW(plan_scoring_units(task, 0), Error);
}

TEST(MultipleChoiceTotals, CountsChanceAndAnswersOfScoredExamplesOnly) {
    ChoiceTask task = task_with_choices({4, 2, 5});
    task.examples[0].label = 1;
    task.examples[1].label = 0;
    task.examples[2].label = 4;
    task.examples[2].context_cut = 3;
    std::vector<ExampleScore> scores(3);
    scores[0] = {true, {}, {}, 1, 2};
    scores[1] = {false, {}, {}, 0, 0};  // another rank's
    scores[2] = {true, {}, {}, 4, 4};
    const TaskTotals totals = count_task_results(task, scores);
    EXPECT_EQ(totals.examples, 2);
    EXPECT_EQ(totals.correct, 2);
    EXPECT_EQ(totals.correct_norm, 1);
    EXPECT_EQ(totals.contexts_cut, 1);
    EXPECT_DOUBLE_EQ(totals.chance(), (0.25 + 0.2) / 2);
    const TaskTotals copy = TaskTotals::from_array(totals.to_array());
    EXPECT_EQ(copy.correct_norm, 1);
    EXPECT_DOUBLE_EQ(copy.chance_sum, totals.chance_sum);
}

// Newcombe (1998), "Two-sided confidence intervals for the single proportion", Statistics in
// Medicine 17: Table II, method 3 (score interval without continuity correction).
TEST(MultipleChoiceTotals, WilsonIntervalMatchesNewcombe1998) {
    const struct {
        int64_t successes, trials;
        double low, high;
    } published[] = {
        {81, 263, 0.2553, 0.3662}, {15, 148, 0.0624, 0.1605}, {0, 20, 0.0, 0.1611}, {1, 29, 0.0061, 0.1718}};
    for (const auto& row : published) {
        const Interval interval = wilson_interval(row.successes, row.trials);
        EXPECT_NEAR(interval.low, row.low, 5e-5) << row.successes << "/" << row.trials;
        EXPECT_NEAR(interval.high, row.high, 5e-5) << row.successes << "/" << row.trials;
    }
}

}  // namespace
}  // namespace mixgpt
