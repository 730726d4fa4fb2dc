#include "model/checkpoint.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <tuple>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/h5.h"
#include "core/log.h"
#include "model/checkpoint_header.h"
#include "model/parameters.h"

namespace mixgpt {
namespace {

using FileHandle = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

FileHandle open_file(const std::string& path, const char* mode) {
    FileHandle file(std::fopen(path.c_str(), mode), &std::fclose);
    MIXGPT_REQUIRE(file != nullptr, path + ": cannot open");
    return file;
}

// A checkpoint opened for reading: everything read about it comes from this one open file, so a
// file removed meanwhile (a training run rotating its checkpoints) is still read whole.
FileHandle open_checkpoint(const std::string& path) {
    FileHandle file(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (file == nullptr && errno == ENOENT) throw Error(path + ": no such checkpoint");
    MIXGPT_REQUIRE(file != nullptr, path + ": cannot open (" + std::strerror(errno) + ")");
    return file;
}

// CRC-32 (zlib) of the bytes after the user block, read in 1 MiB chunks.
uint32_t payload_crc32(std::FILE* file, const std::string& path) {
    MIXGPT_REQUIRE(std::fseek(file, static_cast<long>(kCheckpointHeaderBytes), SEEK_SET) == 0,
                   path + ": cannot seek");
    std::vector<unsigned char> chunk(1 << 20);
    uLong crc = crc32(0L, Z_NULL, 0);
    size_t got = 0;
    while ((got = std::fread(chunk.data(), 1, chunk.size(), file)) > 0)
        crc = crc32(crc, chunk.data(), static_cast<uInt>(got));
    MIXGPT_REQUIRE(!std::ferror(file), path + ": read error");
    return static_cast<uint32_t>(crc);
}

CheckpointHeader read_header(std::FILE* file, const std::string& path) {
    std::vector<char> block(kCheckpointHeaderBytes);
    MIXGPT_REQUIRE(std::fseek(file, 0, SEEK_SET) == 0, path + ": cannot seek");
    const size_t got = std::fread(block.data(), 1, block.size(), file);
    return parse_checkpoint_header(block.data(), got, path);
}

// The header, size and checksum of the open checkpoint `file`.
CheckpointHeader verify_open_checkpoint(std::FILE* file, const std::string& path) {
    const CheckpointHeader header = read_header(file, path);
    struct stat status {};
    MIXGPT_REQUIRE(::fstat(::fileno(file), &status) == 0,
                   path + ": cannot stat (" + std::strerror(errno) + ")");
    const uint64_t size = static_cast<uint64_t>(status.st_size);
    const uint64_t expected = kCheckpointHeaderBytes + header.payload_bytes;
    MIXGPT_REQUIRE(size >= expected,
                   format("%s: truncated checkpoint (%llu of %llu bytes)", path.c_str(),
                          static_cast<unsigned long long>(size), static_cast<unsigned long long>(expected)));
    MIXGPT_REQUIRE(size == expected,
                   format("%s: checkpoint has %llu bytes, its header says %llu", path.c_str(),
                          static_cast<unsigned long long>(size), static_cast<unsigned long long>(expected)));
    MIXGPT_REQUIRE(payload_crc32(file, path) == header.payload_crc32,
                   path + ": corrupt checkpoint (checksum mismatch)");
    return header;
}

void write_header(const std::string& path, const std::string& run_id) {
    CheckpointHeader header;
    header.version = kCheckpointFormatVersion;
    header.run_id = run_id;
    header.payload_bytes = std::filesystem::file_size(path) - kCheckpointHeaderBytes;
    FileHandle file = open_file(path, "r+b");
    header.payload_crc32 = payload_crc32(file.get(), path);
    const std::string block = checkpoint_header_block(header);
    MIXGPT_REQUIRE(std::fseek(file.get(), 0, SEEK_SET) == 0, path + ": cannot seek");
    const bool written = std::fwrite(block.data(), 1, block.size(), file.get()) == block.size() &&
                         std::fflush(file.get()) == 0;
    MIXGPT_REQUIRE(written, path + ": cannot write the checkpoint header");
}

int64_t element_count(const std::vector<int64_t>& shape) {
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    return count;
}

// Checked before allocating: a damaged shape attribute (n_layer 48 over a d2's data) would
// otherwise ask for gigabytes and end as "out of memory".
template <typename T>
std::vector<T> read_vector(const h5::File& file, const std::string& name, h5::Type type, int64_t expected) {
    const int64_t stored = element_count(file.shape(name));
    MIXGPT_REQUIRE(
        stored == expected,
        format("%s: dataset '%s' has %lld values, the model shape of its attributes needs %lld (a damaged "
               "checkpoint)",
               file.path().c_str(), name.c_str(), static_cast<long long>(stored),
               static_cast<long long>(expected)));
    std::vector<T> values(static_cast<size_t>(expected));
    file.read(name, type, values.data(), expected);
    return values;
}

void write_options(h5::File& file, const std::vector<std::pair<std::string, std::string>>& options) {
    file.create_group("/options");
    std::string names;
    for (const auto& [name, value] : options) {
        MIXGPT_REQUIRE(name.find('\n') == std::string::npos && !name.empty(),
                       "checkpoint option names must be non-empty single lines");
        names += name + "\n";
        file.set_attribute("/options", name, value);
    }
    file.set_attribute("/options", "names", names);
}

std::vector<std::pair<std::string, std::string>> read_options(const h5::File& file) {
    std::vector<std::pair<std::string, std::string>> options;
    std::istringstream names(file.attribute_string("/options", "names"));
    for (std::string name; std::getline(names, name);)
        options.emplace_back(name, file.attribute_string("/options", name));
    return options;
}

// The settings the model's family reads (model/family.h), each an attribute of its own name.
void write_family_settings(h5::File& file, const GPTConfig& config) {
    for (Setting setting : config.family().settings) {
        const std::string name = setting_name(setting);
        switch (setting) {
            case Setting::n_kv_head:
                file.set_attribute("/", name, static_cast<int64_t>(config.kv_heads()));
                break;
            case Setting::ffn_hidden:
                file.set_attribute("/", name, static_cast<int64_t>(config.mlp_hidden()));
                break;
            case Setting::norm_epsilon:
                file.set_attribute("/", name, static_cast<double>(config.norm_epsilon));
                break;
            case Setting::rope_theta:
                file.set_attribute("/", name, static_cast<double>(config.rope_theta));
                break;
            case Setting::tie_embeddings:
                file.set_attribute("/", name, int64_t{config.tie_embeddings ? 1 : 0});
                break;
            case Setting::logit_softcap:
                file.set_attribute("/", name, static_cast<double>(config.logit_softcap));
                break;
            case Setting::mlp:
                file.set_attribute("/", name, std::string(mlp_name(config.mlp_kind())));
                break;
            case Setting::norm_weights:
                file.set_attribute("/", name, int64_t{config.norm_weights ? 1 : 0});
                break;
            case Setting::zero_init:
                file.set_attribute("/", name, config.zero_init_name());
                break;
            case Setting::embedding_norm:
                file.set_attribute("/", name, int64_t{config.embedding_norm ? 1 : 0});
                break;
            case Setting::qk_norm:
                file.set_attribute("/", name, int64_t{config.qk_norm ? 1 : 0});
                break;
            case Setting::init:
                file.set_attribute("/", name, std::string(init_scheme_name(config.init)));
                break;
        }
    }
}

void write_spike_guard(h5::File& file, const SpikeGuardState& state) {
    MIXGPT_REQUIRE(state.losses.size() == state.grad_norms.size(),
                   "checkpoint: the spike guard's window holds as many losses as gradient norms");
    const int64_t count = static_cast<int64_t>(state.losses.size());
    file.write("spike_losses", h5::Type::f64, state.losses.data(), {count});
    file.write("spike_grad_norms", h5::Type::f64, state.grad_norms.data(), {count});
    file.set_attribute("/", "spike_skips", state.skips);
    file.set_attribute("/", "spike_skips_in_a_row", state.skips_in_a_row);
}

void write_contents(h5::File& file, const Checkpoint& checkpoint) {
    const int64_t n = static_cast<int64_t>(checkpoint.parameters.size());
    const GPTConfig& config = checkpoint.config;
    file.set_attribute("/", "format_version", kCheckpointFormatVersion);
    file.set_attribute("/", "arch", std::string(arch_name(config.arch)));
    file.set_attribute("/", "n_layer", static_cast<int64_t>(config.n_layer));
    file.set_attribute("/", "n_head", static_cast<int64_t>(config.n_head));
    file.set_attribute("/", "n_embd", static_cast<int64_t>(config.n_embd));
    file.set_attribute("/", "vocab_size", static_cast<int64_t>(config.vocab_size));
    file.set_attribute("/", "max_seq_len", static_cast<int64_t>(config.max_seq_len));
    write_family_settings(file, config);
    // Under --attention-mask document only (absent: the causal mask alone).
    if (config.document_separator >= 0)
        file.set_attribute("/", "document_separator", static_cast<int64_t>(config.document_separator));
    // Under --positions document only (absent: absolute positions).
    if (config.document_positions) file.set_attribute("/", "positions", std::string("document"));
    // Under --window only (absent: the whole context).
    if (config.attention_window > 0) {
        file.set_attribute("/", "attention_window", static_cast<int64_t>(config.attention_window));
        file.set_attribute("/", "window_pattern", config.window_pattern_text());
    }
    file.set_attribute("/", "tokenizer_path", checkpoint.tokenizer_path);
    file.set_attribute("/", "tokenizer_sha256", checkpoint.tokenizer_sha256);
    file.set_attribute("/", "precision", std::string(precision_name(checkpoint.precision)));
    file.set_attribute("/", "step", checkpoint.step);
    file.set_attribute("/", "seed", static_cast<int64_t>(checkpoint.seed));
    file.set_attribute("/", "tokens_seen", checkpoint.tokens_seen);
    file.set_attribute("/", "bad_steps_in_a_row", checkpoint.bad_steps_in_a_row);
    file.set_attribute("/", "loss_scale", static_cast<double>(checkpoint.status.loss_scale));
    file.set_attribute("/", "clean_steps", static_cast<int64_t>(checkpoint.status.clean_steps));
    file.set_attribute("/", "skipped_steps", static_cast<int64_t>(checkpoint.status.skipped_steps));
    file.set_attribute("/", "optimizer_steps", static_cast<int64_t>(checkpoint.status.optimizer_steps));

    file.write("parameters", h5::Type::f32, checkpoint.parameters.data(), {n});
    if (!checkpoint.working_bits.empty())
        file.write("working", h5::Type::u16, checkpoint.working_bits.data(), {n});
    file.write("adam_m", h5::Type::f32, checkpoint.adam_m.data(), {n});
    file.write("adam_v", h5::Type::f32, checkpoint.adam_v.data(), {n});
    const int64_t state_count = static_cast<int64_t>(checkpoint.loader_state.size());
    file.write("loader_state", h5::Type::i64, checkpoint.loader_state.data(), {state_count});
    if (!checkpoint.fp8_scaling.empty()) {
        const int64_t fp8_count = static_cast<int64_t>(checkpoint.fp8_scaling.size());
        file.write("fp8_scaling", h5::Type::f32, checkpoint.fp8_scaling.data(), {fp8_count});
    }
    if (checkpoint.spike_guard) write_spike_guard(file, *checkpoint.spike_guard);
    write_options(file, checkpoint.options);
}

int attribute_int32(const h5::File& file, const char* name) {
    const int64_t value = file.attribute_int("/", name);
    MIXGPT_REQUIRE(value >= INT32_MIN && value <= INT32_MAX,
                   file.path() + ": attribute '" + name + "' out of range");
    return static_cast<int>(value);
}

// A count (step, tokens, counters): a negative one is damage, reported as such.
int64_t attribute_count(const h5::File& file, const char* name) {
    const int64_t value = file.attribute_int("/", name);
    MIXGPT_REQUIRE(value >= 0, format("%s: attribute '%s' is %lld; a count cannot be negative (a damaged or "
                                      "hand-edited checkpoint)",
                                      file.path().c_str(), name, static_cast<long long>(value)));
    return value;
}

int attribute_count32(const h5::File& file, const char* name) {
    attribute_count(file, name);
    return attribute_int32(file, name);
}

SpikeGuardState read_spike_guard(const h5::File& file) {
    SpikeGuardState state;
    const int64_t count = element_count(file.shape("spike_losses"));
    state.losses = read_vector<double>(file, "spike_losses", h5::Type::f64, count);
    state.grad_norms = read_vector<double>(file, "spike_grad_norms", h5::Type::f64, count);
    state.skips = attribute_count(file, "spike_skips");
    state.skips_in_a_row = attribute_count(file, "spike_skips_in_a_row");
    return state;
}

// The family (a checkpoint without `arch` is GPT-2's: written before families existed) and the
// settings it reads; every setting the family reads must be there, except logit_softcap (absent:
// off, as every model was before it existed), mlp (absent: the family's own), norm_weights
// (absent: with weights), zero_init (absent: none), embedding_norm and qk_norm (absent: none) and
// init (absent: gpt2).
void read_family(const h5::File& file, GPTConfig& config) {
    config.arch = file.has_attribute("/", "arch") ? parse_arch(file.attribute_string("/", "arch")) : Arch::gpt2;
    for (Setting setting : config.family().settings) {
        const char* name = setting_name(setting);
        switch (setting) {
            case Setting::n_kv_head:
                config.n_kv_head = attribute_int32(file, name);
                break;
            case Setting::ffn_hidden:
                config.ffn_hidden = attribute_int32(file, name);
                break;
            case Setting::norm_epsilon:
                config.norm_epsilon = static_cast<float>(file.attribute_double("/", name));
                break;
            case Setting::rope_theta:
                config.rope_theta = static_cast<float>(file.attribute_double("/", name));
                break;
            case Setting::tie_embeddings:
                config.tie_embeddings = file.attribute_int("/", name) != 0;
                break;
            case Setting::logit_softcap:  // absent in checkpoints from before the option: off
                if (file.has_attribute("/", name))
                    config.logit_softcap = static_cast<float>(file.attribute_double("/", name));
                break;
            case Setting::mlp:  // absent in checkpoints from before the option: the family's own
                if (file.has_attribute("/", name)) {
                    const MlpKind mlp = parse_mlp(file.attribute_string("/", name));
                    if (mlp != config.family().mlp) config.mlp = mlp;
                }
                break;
            case Setting::norm_weights:  // absent in checkpoints from before the option: with weights
                if (file.has_attribute("/", name)) config.norm_weights = file.attribute_int("/", name) != 0;
                break;
            case Setting::zero_init:  // absent in checkpoints from before the option: none
                if (file.has_attribute("/", name)) {
                    const std::string value = file.attribute_string("/", name);
                    MIXGPT_REQUIRE(value == "none" || value == "proj" || value == "head" || value == "proj,head",
                                   "attribute zero_init is '" + value + "', expected none, proj, head or proj,head");
                    config.zero_init_projections = value == "proj" || value == "proj,head";
                    config.zero_init_head = value == "head" || value == "proj,head";
                }
                break;
            case Setting::embedding_norm:  // absent in checkpoints from before the option: none
                if (file.has_attribute("/", name)) config.embedding_norm = file.attribute_int("/", name) != 0;
                break;
            case Setting::qk_norm:  // absent in checkpoints from before the option: none
                if (file.has_attribute("/", name)) config.qk_norm = file.attribute_int("/", name) != 0;
                break;
            case Setting::init:  // absent in checkpoints from before the option: gpt2
                if (file.has_attribute("/", name)) config.init = parse_init_scheme(file.attribute_string("/", name));
                break;
        }
    }
}

Checkpoint read_contents(const h5::File& file, CheckpointContent content) {
    Checkpoint checkpoint;
    read_family(file, checkpoint.config);
    checkpoint.config.n_layer = attribute_int32(file, "n_layer");
    checkpoint.config.n_head = attribute_int32(file, "n_head");
    checkpoint.config.n_embd = attribute_int32(file, "n_embd");
    checkpoint.config.vocab_size = attribute_int32(file, "vocab_size");
    checkpoint.config.max_seq_len = attribute_int32(file, "max_seq_len");
    if (file.has_attribute("/", "document_separator"))
        checkpoint.config.document_separator = attribute_int32(file, "document_separator");
    if (file.has_attribute("/", "positions")) {
        const std::string positions = file.attribute_string("/", "positions");
        MIXGPT_REQUIRE(positions == "document",
                       file.path() + ": attribute 'positions' is '" + positions + "', expected document");
        checkpoint.config.document_positions = true;
    }
    if (file.has_attribute("/", "attention_window")) {
        checkpoint.config.attention_window = attribute_int32(file, "attention_window");
        checkpoint.config.set_window_pattern(file.attribute_string("/", "window_pattern"));
    }
    checkpoint.config.validate();
    checkpoint.tokenizer_path = file.attribute_string("/", "tokenizer_path");
    checkpoint.tokenizer_sha256 = file.attribute_string("/", "tokenizer_sha256");
    checkpoint.precision = parse_precision(file.attribute_string("/", "precision"));
    checkpoint.step = attribute_count(file, "step");
    checkpoint.seed = static_cast<uint64_t>(file.attribute_int("/", "seed"));
    checkpoint.tokens_seen = attribute_count(file, "tokens_seen");
    checkpoint.bad_steps_in_a_row = attribute_count(file, "bad_steps_in_a_row");
    checkpoint.status.loss_scale = static_cast<float>(file.attribute_double("/", "loss_scale"));
    checkpoint.status.clean_steps = attribute_count32(file, "clean_steps");
    checkpoint.status.skipped_steps = attribute_count32(file, "skipped_steps");
    checkpoint.status.optimizer_steps = attribute_count32(file, "optimizer_steps");

    const int64_t n = ParameterLayout(checkpoint.config).total();
    checkpoint.parameters = read_vector<float>(file, "parameters", h5::Type::f32, n);
    if (file.exists("working"))
        checkpoint.working_bits = read_vector<uint16_t>(file, "working", h5::Type::u16, n);
    if (content == CheckpointContent::everything) {
        checkpoint.adam_m = read_vector<float>(file, "adam_m", h5::Type::f32, n);
        checkpoint.adam_v = read_vector<float>(file, "adam_v", h5::Type::f32, n);
        checkpoint.loader_state = read_vector<int64_t>(file, "loader_state", h5::Type::i64,
                                                       element_count(file.shape("loader_state")));
        if (file.exists("fp8_scaling"))
            checkpoint.fp8_scaling = read_vector<float>(file, "fp8_scaling", h5::Type::f32,
                                                        element_count(file.shape("fp8_scaling")));
        if (file.exists("spike_losses")) checkpoint.spike_guard = read_spike_guard(file);
    }
    checkpoint.options = read_options(file);
    return checkpoint;
}

// Errors from HDF5 checks do not always name the file; every error leaving here does.
std::string with_path(const std::string& path, const std::string& message) {
    return message.compare(0, path.size(), path) == 0 ? message : path + ": " + message;
}

}  // namespace

void write_checkpoint(const std::string& path, const Checkpoint& checkpoint) {
    const size_t n = checkpoint.parameters.size();
    MIXGPT_REQUIRE(static_cast<int64_t>(n) == ParameterLayout(checkpoint.config).total(),
                   path + ": parameter count does not match the model shape");
    MIXGPT_REQUIRE(checkpoint.adam_m.size() == n && checkpoint.adam_v.size() == n,
                   path + ": optimizer moments do not match the parameter count");
    MIXGPT_REQUIRE(checkpoint.working_bits.empty() || checkpoint.working_bits.size() == n,
                   path + ": working copy does not match the parameter count");
    const std::string directory = std::filesystem::path(path).parent_path().string();
    make_directories(directory);
    AtomicOutput output(path);
    try {
        {
            h5::File file = h5::File::create(output.temporary_path(), kCheckpointHeaderBytes);
            write_contents(file, checkpoint);
            file.close();
        }
        write_header(output.temporary_path(), checkpoint.run_id);
    } catch (const Error& error) {
        throw Error(with_path(path, error.what()));
    }
    output.commit();
}

CheckpointHeader verify_checkpoint_file(const std::string& path) {
    const FileHandle file = open_checkpoint(path);
    return verify_open_checkpoint(file.get(), path);
}

std::string checkpoint_run_id(const std::string& path) {
    try {
        return read_header(open_checkpoint(path).get(), path).run_id;
    } catch (const Error&) {
        return "";
    }
}

std::string new_run_id() {
    std::ifstream random("/dev/urandom", std::ios::binary);
    unsigned char bytes[16] = {};
    random.read(reinterpret_cast<char*>(bytes), sizeof(bytes));
    MIXGPT_REQUIRE(random.gcount() == static_cast<std::streamsize>(sizeof(bytes)),
                   "/dev/urandom: cannot read a new run id");
    std::string id;
    for (const unsigned char byte : bytes) id += format("%02x", byte);
    return id;
}

Checkpoint read_checkpoint(const std::string& path, CheckpointContent content) {
    const FileHandle opened = open_checkpoint(path);
    const CheckpointHeader header = verify_open_checkpoint(opened.get(), path);
    try {
        const h5::File file = h5::File::open_read(::fileno(opened.get()), path);
        Checkpoint checkpoint = read_contents(file, content);
        checkpoint.run_id = header.run_id;
        return checkpoint;
    } catch (const Error& error) {
        throw Error(with_path(path, error.what()));
    }
}

void require_compatible(const Checkpoint& checkpoint, const std::string& checkpoint_path,
                        const GPTConfig& config, const std::string& tokenizer_sha256) {
    const auto require_same = [&](const char* field, const std::string& stored, const std::string& wanted) {
        MIXGPT_REQUIRE(stored == wanted, format("%s: refusing checkpoint: %s is %s there, %s in this run",
                                                checkpoint_path.c_str(), field, stored.c_str(), wanted.c_str()));
    };
    const GPTConfig& saved = checkpoint.config;
    require_same("arch", arch_name(saved.arch), arch_name(config.arch));
    for (const auto& [field, stored, wanted] : {std::make_tuple("n_layer", saved.n_layer, config.n_layer),
                                                std::make_tuple("n_head", saved.n_head, config.n_head),
                                                std::make_tuple("n_embd", saved.n_embd, config.n_embd),
                                                std::make_tuple("vocab_size", saved.vocab_size, config.vocab_size),
                                                std::make_tuple("max_seq_len", saved.max_seq_len, config.max_seq_len),
                                                std::make_tuple("n_kv_head", saved.kv_heads(), config.kv_heads()),
                                                std::make_tuple("ffn_hidden", saved.mlp_hidden(), config.mlp_hidden())})
        require_same(field, std::to_string(stored), std::to_string(wanted));
    require_same("norm_epsilon", format("%g", static_cast<double>(saved.norm_epsilon)),
                 format("%g", static_cast<double>(config.norm_epsilon)));
    if (saved.family().positions == PositionKind::rotary)
        require_same("rope_theta", format("%g", static_cast<double>(saved.rope_theta)),
                     format("%g", static_cast<double>(config.rope_theta)));
    require_same("tie_embeddings", saved.tie_embeddings ? "true" : "false", config.tie_embeddings ? "true" : "false");
    const auto softcap = [](float value) {
        return value > 0 ? format("%g", static_cast<double>(value)) : "off";
    };
    MIXGPT_REQUIRE(
        saved.logit_softcap == config.logit_softcap,
        format("%s: refusing checkpoint: logit_softcap is %s there, %s in this run (--logit-softcap)",
               checkpoint_path.c_str(), softcap(saved.logit_softcap).c_str(),
               softcap(config.logit_softcap).c_str()));
    MIXGPT_REQUIRE(saved.mlp_kind() == config.mlp_kind(),
                   format("%s: refusing checkpoint: mlp is %s there, %s in this run (--mlp)", checkpoint_path.c_str(),
                          mlp_name(saved.mlp_kind()), mlp_name(config.mlp_kind())));
    const auto require_same_switch = [&](const char* field, const char* option, bool stored, bool wanted) {
        MIXGPT_REQUIRE(stored == wanted, format("%s: refusing checkpoint: %s is %s there, %s in this run (%s)",
                                                checkpoint_path.c_str(), field, stored ? "true" : "false",
                                                wanted ? "true" : "false", option));
    };
    require_same_switch("norm_weights", "--norm-weights", saved.norm_weights, config.norm_weights);
    MIXGPT_REQUIRE(saved.zero_init_name() == config.zero_init_name(),
                   format("%s: refusing checkpoint: zero_init is %s there, %s in this run (--zero-init)",
                          checkpoint_path.c_str(), saved.zero_init_name().c_str(), config.zero_init_name().c_str()));
    require_same_switch("embedding_norm", "--embedding-norm", saved.embedding_norm, config.embedding_norm);
    require_same_switch("qk_norm", "--qk-norm", saved.qk_norm, config.qk_norm);
    MIXGPT_REQUIRE(saved.init == config.init,
                   format("%s: refusing checkpoint: init is %s there, %s in this run (--init)", checkpoint_path.c_str(),
                          init_scheme_name(saved.init), init_scheme_name(config.init)));
    const auto mask = [](int32_t separator) {
        return separator >= 0 ? format("document (separator %d)", separator) : std::string("causal");
    };
    MIXGPT_REQUIRE(
        saved.document_separator == config.document_separator,
        format("%s: refusing checkpoint: attention_mask is %s there, %s in this run (--attention-mask)",
               checkpoint_path.c_str(), mask(saved.document_separator).c_str(),
               mask(config.document_separator).c_str()));
    const auto positions = [](bool document) { return document ? "document" : "absolute"; };
    MIXGPT_REQUIRE(saved.document_positions == config.document_positions,
                   format("%s: refusing checkpoint: positions is %s there, %s in this run (--positions)",
                          checkpoint_path.c_str(), positions(saved.document_positions),
                          positions(config.document_positions)));
    const auto window = [](const GPTConfig& c) {
        if (c.attention_window == 0) return std::string("none");
        const std::string pattern = c.window_pattern_text();
        return std::to_string(c.attention_window) + (pattern.empty() ? "" : " (" + pattern + ")");
    };
    MIXGPT_REQUIRE(saved.attention_window == config.attention_window &&
                       saved.window_pattern_text() == config.window_pattern_text(),
                   format("%s: refusing checkpoint: the attention window is %s there, %s in this run (--window, "
                          "--window-pattern)",
                          checkpoint_path.c_str(), window(saved).c_str(), window(config).c_str()));
    MIXGPT_REQUIRE(checkpoint.tokenizer_sha256 == tokenizer_sha256,
                   checkpoint_path + ": refusing checkpoint: tokenizer_sha256 is " +
                       checkpoint.tokenizer_sha256 + " there, " + tokenizer_sha256 +
                       " in this run (another tokenizer)");
}

std::string checkpoint_path(const std::string& directory, int64_t step) {
    return (std::filesystem::path(directory) / format("step_%08lld.h5", static_cast<long long>(step)))
        .string();
}

std::vector<std::string> list_checkpoints(const std::string& directory) {
    std::vector<std::pair<int64_t, std::string>> found;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
        const std::string name = entry.path().filename().string();
        long long step = 0;
        int consumed = 0;
        if (std::sscanf(name.c_str(), "step_%8lld.h5%n", &step, &consumed) == 1 &&
            static_cast<size_t>(consumed) == name.size() &&
            name.size() == std::string("step_00000000.h5").size())
            found.emplace_back(step, entry.path().string());
    }
    std::sort(found.begin(), found.end());
    std::vector<std::string> paths;
    for (auto& item : found) paths.push_back(std::move(item.second));
    return paths;
}

std::string newest_valid_checkpoint(const std::string& directory) {
    const std::vector<std::string> paths = list_checkpoints(directory);
    for (auto path = paths.rbegin(); path != paths.rend(); ++path) {
        try {
            verify_checkpoint_file(*path);
            return *path;
        } catch (const Error& error) {
            log_warning(std::string("skipping invalid checkpoint: ") + error.what());
        }
    }
    return "";
}

std::vector<std::string> remove_old_checkpoints(const std::string& directory, int keep,
                                                const std::string& run_id,
                                                const std::string& protected_path) {
    MIXGPT_REQUIRE(keep >= 1, "keep-checkpoints: must be at least 1");
    std::vector<std::string> lineage;  // oldest first
    for (const std::string& path : list_checkpoints(directory))
        if (!run_id.empty() && checkpoint_run_id(path) == run_id) lineage.push_back(path);
    std::vector<std::string> removed;
    const size_t remove_count = lineage.size() > static_cast<size_t>(keep) ? lineage.size() - keep : 0;
    for (size_t i = 0; i < remove_count; ++i) {
        std::error_code error;
        if (std::filesystem::equivalent(lineage[i], protected_path, error)) continue;
        std::filesystem::remove(lineage[i], error);
        if (error)
            log_warning(lineage[i] + ": cannot remove old checkpoint (" + error.message() + ")");
        else
            removed.push_back(lineage[i]);
    }
    return removed;
}

}  // namespace mixgpt
