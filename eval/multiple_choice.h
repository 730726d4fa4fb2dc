// Multiple-choice tasks (HellaSwag and its kind): examples read from JSON Lines, and the token
// rows a model scores for them.
//
// Formats, one JSON object per line (blank lines are skipped):
//   hellaswag  HellaSwag's own files: "ctx" (string), "endings" (4 strings), "label" (0-3, a number
//              or a numeric string); "ind" is the example's id.
//   mc         {"context": string, "choices": [2 or more strings], "label": index}; "id" if present.
// Without an id field the id is the line number.
//
// Rows (llm.c's hellaswag.py rules): the context's tokens followed by one choice's tokens, each
// choice encoded on its own with a leading space (" " + choice), as lm-evaluation-harness does
// too. An empty context is the end-of-text token (the harness's rule), so the first choice token is
// predicted from a document start. Every choice token is scored. A row longer than the model's
// window (T + 1 tokens: T inputs, each predicting the next) loses context tokens from the left; a
// choice of more than T tokens cannot be scored and is an error of its line. Choices with identical
// tokens share one row, so they tie exactly.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace mixgpt {

enum class TaskFormat { hellaswag, mc };
// "hellaswag" or "mc"; throws Error "\"<name>\" is not a task format (hellaswag, mc)" otherwise.
TaskFormat parse_task_format(const std::string& name);
const char* task_format_name(TaskFormat format);

struct ChoiceExample {
    std::string id;
    std::string context;
    std::vector<std::string> choices;
    int label = 0;  // index of the right choice
};

// One line of a task file; throws Error "<field>: <reason>" (e.g. "endings: expected 4 strings").
ChoiceExample parse_choice_example(std::string_view line, TaskFormat format, int64_t line_number);

struct EncodedExample {
    std::string id;
    int64_t line = 0;  // in the task file, from 1
    int label = 0;
    std::vector<int32_t> context;               // every context token ([end of text] for an empty context)
    std::vector<std::vector<int32_t>> choices;  // each choice's tokens, " " + choice
    std::vector<int> row_of_choice;             // the choice whose row scores this one: itself or an
                                                // earlier choice with identical tokens
    int context_cut = 0;                        // context tokens the longest row loses to the window
};

// Throws Error "<choices field>[<i>]: ..." for a choice that cannot be scored in a window of
// `window` tokens.
EncodedExample encode_choice_example(const ChoiceExample& example, TaskFormat format, int64_t line,
                                     const Tokenizer& tokenizer, int window);

// The tokens of one choice's row, at most window + 1: inputs are tokens[0, n-1), targets [1, n).
// Targets from position first_scored on (input positions) are the choice's tokens.
struct ChoiceRow {
    std::vector<int32_t> tokens;
    int first_scored = 0;
};
ChoiceRow choice_row(const EncodedExample& example, int choice, int window);

struct TaskLoadOptions {
    TaskFormat format = TaskFormat::hellaswag;
    int window = 0;               // the model's context T
    int64_t limit = 0;            // keep the first `limit` examples; 0: all
    bool skip_bad_lines = false;  // count and skip lines that cannot be read or scored, instead of failing
};

struct ChoiceTask {
    std::string path;
    TaskFormat format = TaskFormat::hellaswag;
    int window = 0;
    std::vector<EncodedExample> examples;
    int64_t skipped_lines = 0;
    int64_t contexts_cut = 0;  // examples whose longest row lost context tokens
};

// Reads, parses and encodes a task file (plain, .gz or .zst). A bad line throws
// Error "<path>:<line>: <field>: <reason>", or with skip_bad_lines is counted and logged once.
ChoiceTask load_choice_task(const std::string& path, const TaskLoadOptions& options,
                            const Tokenizer& tokenizer);

}  // namespace mixgpt
