// `mixgpt prepare`: maps the command line onto PrepareOptions (tokenizer/prepare.h).
#include <cstdio>
#include <fstream>
#include <iterator>

#include "cli/commands.h"
#include "cli/threads_option.h"
#include "cli/toml_config.h"
#include "core/error.h"
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
    std::string tokenizer = "sentencepiece";
    std::string gpt2_files;
};

// --tokenizer sentencepiece (train one), gpt2 (with --gpt2-files) or the path of a tokenizer to reuse.
void choose_tokenizer(PrepareArguments& arguments) {
    PrepareOptions& options = arguments.options;
    if (arguments.tokenizer == "gpt2" || !arguments.gpt2_files.empty()) {
        MIXGPT_REQUIRE(
            arguments.tokenizer == "gpt2" || arguments.tokenizer == "sentencepiece",
            "--gpt2-files goes with --tokenizer gpt2, not with --tokenizer " + arguments.tokenizer);
        MIXGPT_REQUIRE(
            !arguments.gpt2_files.empty(),
            "--tokenizer gpt2 needs --gpt2-files DIR (encoder.json + vocab.bpe, or a .tiktoken file)");
        options.tokenizer_path = arguments.gpt2_files;
        options.tokenizer_kind = TokenizerKind::gpt2;
    } else if (arguments.tokenizer != "sentencepiece") {
        options.tokenizer_path = arguments.tokenizer;
    }
}

void run(PrepareArguments& arguments) {
    PrepareOptions& options = arguments.options;
    options.corpus.format = parse_input_format(arguments.format);
    options.tokenizer.model_type = parse_tokenizer_model_type(arguments.model_type);
    choose_tokenizer(arguments);
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
    CLI::App* command = app.add_subcommand("prepare",
                                           "Encode a corpus into an HDF5 token dataset, with a SentencePiece "
                                           "tokenizer trained on it or GPT-2's");
    add_config_option(*command);
    command->add_option("inputs", options.corpus.inputs,
                        "Input files, directories (recursive) or glob patterns");
    command->add_option("--corpus", options.builtin_corpus,
                        "Built-in corpus instead of inputs: kjv (King James Bible)");
    command->add_option(
        "--output", options.output_directory,
        "Output directory for dataset.h5 and the tokenizer's files (default with --corpus: data/<corpus>)");
    command->add_option("--format", arguments->format, "Input format: auto (by extension), text or jsonl")
        ->capture_default_str();
    command->add_option("--doc-sep", options.corpus.doc_separator,
                        "Plain text: a line equal to this separates documents; 'blank-line' for paragraphs "
                        "(default: one document per file)");
    command->add_option("--jsonl-key", options.corpus.jsonl_key, "JSONL: the field holding the text")
        ->capture_default_str();
    command->add_flag("--skip-bad-lines", options.corpus.skip_bad_lines,
                      "JSONL: skip and count bad lines instead of failing");
    command
        ->add_option("--vocab-size", options.tokenizer.vocab_size,
                     "Vocabulary size of the trained SentencePiece tokenizer")
        ->capture_default_str();
    command->add_option("--model-type", arguments->model_type, "Tokenizer model: bpe or unigram")
        ->capture_default_str();
    command
        ->add_option("--tokenizer-sample-bytes", options.tokenizer_sample_bytes,
                     "Bytes of the corpus the tokenizer trains on, spread over all inputs")
        ->capture_default_str();
    command
        ->add_option(
            "--tokenizer", arguments->tokenizer,
            "sentencepiece: train one on the corpus; gpt2: GPT-2's BPE (50,257 tokens, with "
            "--gpt2-files); or the path of a tokenizer to reuse (a SentencePiece .model, GPT-2 files)")
        ->capture_default_str();
    command->add_option(
        "--gpt2-files", arguments->gpt2_files,
        "With --tokenizer gpt2: a folder holding GPT-2's encoder.json + vocab.bpe (or vocab.json "
        "+ merges.txt, or a .tiktoken rank file), or one of those files");
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
