// `mixgpt prepare`: maps the command line onto PrepareOptions (tokenizer/prepare.h).
#include <cstdio>
#include <fstream>
#include <iterator>

#include "cli/commands.h"
#include "cli/number_checks.h"
#include "cli/threads_option.h"
#include "cli/toml_config.h"
#include "core/error.h"
#include "core/log.h"
#include "core/stop_signal.h"
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
    const StopSignalGuard signals;
    options.stop_requested = [&signals] { return signals.stop_requested(); };
    const PrepareResult result = run_prepare(options);
    std::printf("%s: %lld shards (%lld written now), tokenizer %s\n", result.dataset_path.c_str(),
                static_cast<long long>(result.shards), static_cast<long long>(result.shards_written),
                result.tokenizer_path.c_str());
    for (const auto& [name, split] : {std::pair{"train", result.train}, std::pair{"val", result.val}}) {
        std::printf("  %-5s %10lld tokens %12lld bytes %8lld documents\n", name,
                    static_cast<long long>(split.tokens), static_cast<long long>(split.bytes),
                    static_cast<long long>(split.documents));
    }
    if (result.threads == 0) return;  // nothing was encoded (--resume of a complete dataset)
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
                                           "Encode a corpus into a dataset folder of HDF5 shards, with a "
                                           "SentencePiece tokenizer trained on it or GPT-2's");
    add_config_option(*command);
    command->add_option(
        "inputs", options.corpus.inputs,
        "Input files, '-' for standard input, directories (recursive: text-like names only) or "
        "glob patterns; plain, .gz, .zst or .xz (detected from the content)");
    command->add_option("--corpus", options.builtin_corpus,
                        "Built-in corpus instead of inputs: kjv (King James Bible)");
    command->add_option(
        "--output", options.output_directory,
        "Output folder: shards, index.json and the tokenizer's files (tokenizer.model, or GPT-2's) "
        "(default with --corpus: data/<corpus>)");
    command
        ->add_option(
            "--format", arguments->format,
            "Input format: auto (.jsonl/.ndjson, and .json or '-' holding one JSON object per line, are "
            "JSON lines; the rest text), text or jsonl")
        ->capture_default_str();
    command->add_option(
        "--include", options.corpus.include,
        "In directories, also take files whose name matches this glob (repeatable; default: .txt, "
        ".text, .jsonl, .ndjson, .json, optionally .gz/.zst/.xz)");
    command->add_flag(
        "--skip-binary", options.corpus.skip_binary,
        "Leave inputs that look binary (Parquet, zip, PDF, executables, not UTF-8...) instead of failing "
        "(each input file is then read through once more, to judge all of it)");
    command
        ->add_option("--shard-tokens", options.shard_tokens,
                     "Tokens per shard: a shard closes at the first document end past this")
        ->check(positive())
        ->capture_default_str();
    command->add_flag(
        "--append", options.append,
        "Add the inputs' documents to the dataset in --output, as new shards with its tokenizer");
    command->add_flag(
        "--resume", options.resume,
        "Continue an interrupted prepare (or --append) from its last complete shard; same inputs "
        "and options");
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
    command->add_flag("--force", options.force,
                      "Replace an existing dataset in --output (once the new one is complete)");
    command->callback([arguments, command] {
        for (const char* flag : {"--val-fraction", "--seed", "--vocab-size"})
            if (command->get_option(flag)->count() > 0)
                arguments->options.given_dataset_options.push_back(flag);
        run(*arguments);
    });
}

}  // namespace mixgpt::cli
