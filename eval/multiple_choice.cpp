#include "eval/multiple_choice.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "eval/multiple_choice_file.h"

namespace mixgpt {
namespace {

using Json = nlohmann::json;

struct FormatFields {
    const char* context;
    const char* choices;
    const char* id;
    size_t exact_choices;  // 0: any number from 2
};

FormatFields fields_of(TaskFormat format) {
    return format == TaskFormat::hellaswag ? FormatFields{"ctx", "endings", "ind", 4}
                                           : FormatFields{"context", "choices", "id", 0};
}

const Json& require_field(const Json& object, const char* field) {
    const auto found = object.find(field);
    MIXGPT_REQUIRE(found != object.end(), std::string(field) + ": missing");
    return *found;
}

std::string require_string(const Json& object, const char* field) {
    const Json& value = require_field(object, field);
    MIXGPT_REQUIRE(value.is_string(), std::string(field) + ": expected a string, found " + value.type_name());
    return value.get<std::string>();
}

std::vector<std::string> require_choices(const Json& object, const FormatFields& fields) {
    const Json& value = require_field(object, fields.choices);
    const std::string expected = fields.exact_choices > 0
                                     ? "an array of " + std::to_string(fields.exact_choices) + " strings"
                                     : "an array of 2 or more strings";
    MIXGPT_REQUIRE(value.is_array(),
                   std::string(fields.choices) + ": expected " + expected + ", found " + value.type_name());
    MIXGPT_REQUIRE(fields.exact_choices > 0 ? value.size() == fields.exact_choices : value.size() >= 2,
                   std::string(fields.choices) + ": expected " + expected + ", found " +
                       std::to_string(value.size()) + " elements");
    std::vector<std::string> choices;
    for (size_t i = 0; i < value.size(); ++i) {
        MIXGPT_REQUIRE(value[i].is_string(), std::string(fields.choices) + "[" + std::to_string(i) +
                                                 "]: expected a string, found " + value[i].type_name());
        choices.push_back(value[i].get<std::string>());
    }
    return choices;
}

// A JSON integer, or a string of decimal digits (HellaSwag as published by Hugging Face).
int require_label(const Json& object, size_t choices) {
    const Json& value = require_field(object, "label");
    int64_t label = -1;
    if (value.is_number_integer()) {
        label = value.get<int64_t>();
    } else if (value.is_string()) {
        const std::string text = value.get<std::string>();
        MIXGPT_REQUIRE(
            !text.empty() && text.size() < 10 &&
                std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); }),
            "label: expected an integer, found the string \"" + text + "\"");
        label = std::stoll(text);
    } else {
        throw Error(std::string("label: expected an integer, found ") + value.type_name());
    }
    MIXGPT_REQUIRE(label >= 0 && label < static_cast<int64_t>(choices),
                   "label: " + std::to_string(label) + " is not the index of one of the " +
                       std::to_string(choices) + " choices");
    return static_cast<int>(label);
}

std::string id_of(const Json& object, const char* field, int64_t line_number) {
    const auto found = object.find(field);
    if (found == object.end() || found->is_null()) return std::to_string(line_number);
    return found->is_string() ? found->get<std::string>() : found->dump();
}

bool is_blank(std::string_view line) {
    return std::all_of(line.begin(), line.end(), [](unsigned char c) { return std::isspace(c); });
}

}  // namespace

TaskFormat parse_task_format(const std::string& name) {
    if (name == "hellaswag") return TaskFormat::hellaswag;
    if (name == "mc") return TaskFormat::mc;
    throw Error("\"" + name + "\" is not a task format (hellaswag, mc)");
}

const char* task_format_name(TaskFormat format) {
    return format == TaskFormat::hellaswag ? "hellaswag" : "mc";
}

ChoiceExample parse_choice_example(std::string_view line, TaskFormat format, int64_t line_number) {
    Json object;
    try {
        object = Json::parse(line);
    } catch (const Json::parse_error& error) {
        throw Error("not JSON (syntax error at byte " + std::to_string(error.byte) + ")");
    }
    MIXGPT_REQUIRE(object.is_object(), std::string("expected a JSON object, found ") + object.type_name());
    const FormatFields fields = fields_of(format);
    ChoiceExample example;
    example.context = require_string(object, fields.context);
    example.choices = require_choices(object, fields);
    example.label = require_label(object, example.choices.size());
    example.id = id_of(object, fields.id, line_number);
    return example;
}

EncodedExample encode_choice_example(const ChoiceExample& example, TaskFormat format, int64_t line,
                                     const Tokenizer& tokenizer, int window) {
    EncodedExample encoded;
    encoded.id = example.id;
    encoded.line = line;
    encoded.label = example.label;
    encoded.context = example.context.empty() ? std::vector<int32_t>{tokenizer.eot_id()}
                                              : tokenizer.encode(example.context);
    const std::string field = fields_of(format).choices;
    for (size_t c = 0; c < example.choices.size(); ++c) {
        std::vector<int32_t> tokens = tokenizer.encode(" " + example.choices[c]);
        MIXGPT_REQUIRE(static_cast<int64_t>(tokens.size()) <= window,
                       field + "[" + std::to_string(c) + "]: " + std::to_string(tokens.size()) +
                           " tokens, more than the model's window of " + std::to_string(window));
        const int total = static_cast<int>(encoded.context.size() + tokens.size());
        encoded.context_cut = std::max(encoded.context_cut, total - (window + 1));
        const auto same = std::find(encoded.choices.begin(), encoded.choices.end(), tokens);
        encoded.row_of_choice.push_back(static_cast<int>(same - encoded.choices.begin()));
        encoded.choices.push_back(std::move(tokens));
    }
    return encoded;
}

ChoiceRow choice_row(const EncodedExample& example, int choice, int window) {
    const std::vector<int32_t>& ending = example.choices[static_cast<size_t>(choice)];
    const size_t total = example.context.size() + ending.size();
    const size_t length = std::min(total, static_cast<size_t>(window) + 1);
    const size_t cut = total - length;  // < context.size(), since ending.size() <= window
    ChoiceRow row;
    row.tokens.assign(example.context.begin() + static_cast<ptrdiff_t>(cut), example.context.end());
    row.tokens.insert(row.tokens.end(), ending.begin(), ending.end());
    row.first_scored = static_cast<int>(length - 1 - ending.size());
    return row;
}

ChoiceTask load_choice_task(const std::string& path, const TaskLoadOptions& options,
                            const Tokenizer& tokenizer) {
    MIXGPT_REQUIRE(options.window >= 1, "task: the model's window must hold at least one token");
    MIXGPT_REQUIRE(options.limit >= 0, "limit: must not be negative");
    ChoiceTask task;
    task.path = path;
    task.format = options.format;
    task.window = options.window;
    TaskFileLines lines(path);
    std::string line;
    while ((options.limit == 0 || static_cast<int64_t>(task.examples.size()) < options.limit) &&
           lines.next(line)) {
        if (is_blank(line)) continue;
        const int64_t number = lines.line_number();
        try {
            const ChoiceExample example = parse_choice_example(line, options.format, number);
            task.examples.push_back(
                encode_choice_example(example, options.format, number, tokenizer, options.window));
        } catch (const Error& error) {
            const std::string message = path + ":" + std::to_string(number) + ": " + error.what();
            if (!options.skip_bad_lines) throw Error(message);
            if (task.skipped_lines == 0) log_warning(message + " (skipped, as are further bad lines)");
            ++task.skipped_lines;
        }
    }
    MIXGPT_REQUIRE(!task.examples.empty(),
                   path + ": no examples" + (task.skipped_lines > 0 ? " (every line was skipped)" : ""));
    for (const EncodedExample& example : task.examples) task.contexts_cut += example.context_cut > 0 ? 1 : 0;
    return task;
}

}  // namespace mixgpt
