// `mixgpt prepare`: maps the command line onto PrepareOptions (tokenizer/prepare.h).
#include <cstdio>
#include <fstream>
#include <iterator>

#include "cli/commands.h"
#include "cli/threads_option.h"
#include "cli/toml_config.h"
#include "core/log.h"
#include "tokenizer/prepare.h"

namespace mixgpt::cli {
namespace {

// The command line as the process received it, for the dataset's `command` attribute.
std::string process_command_line() {
    std::ifstream file("/proc/self/cmdline", std::ios::binary);
    std::string arguments((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    while (!arguments.empty() && arguments.back() == '\0') arguments.pop_back();
    for (char& c : arguments) {
        if (c == '\0') c = ' ';
    }
    return arguments;
}

struct PrepareArguments {
    PrepareOptions options;
    std::string format = "auto";
    std::string model_type = "bpe";
};

void run(PrepareArguments& arguments) {
    PrepareOptions& options = arguments.options;
    options.corpus.format = parse_input_format(arguments.format);
    options.tokenizer.model_type = parse_tokenizer_model_type(arguments.model_type);
    options.tokenizer.threads = options.threads;
    options.command = process_command_line();
    const PrepareResult result = run_prepare(options);
    std::printf("wrote %s and %s\n", result.dataset_path.c_str(), result.tokenizer_path.c_str());
    for (const auto& [name, split] : {std::pair{"train", result.train}, std::pair{"val", result.val}}) {
        std::printf("  %-5s %10lld tokens %12lld bytes %8lld documents\n", name,
                    static_cast<long long>(split.tokens), static_cast<long long>(split.bytes),
                    static_cast<long long>(split.documents));
    }
    std::printf(
        "tokenizer %.1f s, encoding %.1f s (%.1f MB at %.1f MB/s on %d threads, %.1f MB/s per thread)\n",
        result.tokenizer_seconds, result.encode_seconds, result.input_megabytes,
        result.input_megabytes / result.encode_seconds, result.threads,
        result.input_megabytes / result.encode_seconds / result.threads);
}

}  // namespace

void add_prepare_command(CLI::App& app) {
    auto arguments = std::make_shared<PrepareArguments>();
    PrepareOptions& options = arguments->options;
    CLI::App* command = app.add_subcommand(
        "prepare", "Train a SentencePiece tokenizer on a corpus and encode it into an HDF5 token dataset");
    add_config_option(*command);
    command->add_option("inputs", options.corpus.inputs,
                        "Input files, directories (recursive) or glob patterns");
    command->add_option("--corpus", options.builtin_corpus,
                        "Built-in corpus instead of inputs: kjv (King James Bible)");
    command->add_option(
        "--output", options.output_directory,
        "Output directory for dataset.h5 and tokenizer.model (default with --corpus: data/<corpus>)");
    command->add_option("--format", arguments->format, "Input format: auto (by extension), text or jsonl")
        ->capture_default_str();
    command->add_option("--doc-sep", options.corpus.doc_separator,
                        "Plain text: a line equal to this separates documents; 'blank-line' for paragraphs "
                        "(default: one document per file)");
    command->add_option("--jsonl-key", options.corpus.jsonl_key, "JSONL: the field holding the text")
        ->capture_default_str();
    command->add_flag("--skip-bad-lines", options.corpus.skip_bad_lines,
                      "JSONL: skip and count bad lines instead of failing");
    command->add_option("--vocab-size", options.tokenizer.vocab_size, "Tokenizer vocabulary size")
        ->capture_default_str();
    command->add_option("--model-type", arguments->model_type, "Tokenizer model: bpe or unigram")
        ->capture_default_str();
    command
        ->add_option("--tokenizer-sample-bytes", options.tokenizer_sample_bytes,
                     "Bytes of the corpus the tokenizer trains on, spread over all inputs")
        ->capture_default_str();
    command->add_option("--tokenizer", options.tokenizer_path,
                        "Reuse this SentencePiece model instead of training one");
    command
        ->add_option("--val-fraction", options.val_fraction, "Fraction of documents in the validation split")
        ->capture_default_str();
    command->add_option("--seed", options.seed, "Seed of the document split")->capture_default_str();
    add_threads_option(*command, options.threads, "Threads for training and encoding (0: all cores)")
        ->capture_default_str();
    command->add_flag("--force", options.force, "Overwrite existing outputs");
    command->callback([arguments] { run(*arguments); });
}

}  // namespace mixgpt::cli
