#include "cli/toml_config.h"

// toml++ 3.3's internal assertions are off: some reject input its parser then reports properly
// as a parse_error ("[*" asserts in parse_key; found by fuzz/toml_config), and assert() aborts
// mixgpt. Not through NDEBUG, which turns them into optimizer assumptions instead.
#define TOML_ASSERT(expr) static_cast<void>(0)
#include <sys/stat.h>
#include <toml++/toml.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <sstream>

namespace mixgpt::cli {
namespace {

constexpr uintmax_t kMaxConfigBytes = 1 << 20;

std::string value_text(const toml::node& node) {
    if (auto text = node.value<std::string>()) return *text;
    if (node.is_boolean()) return *node.value<bool>() ? "true" : "false";
    if (node.is_integer()) return std::to_string(*node.value<int64_t>());
    if (node.is_floating_point()) {
        std::ostringstream stream;
        stream.precision(17);
        stream << *node.value<double>();
        return stream.str();
    }
    throw CLI::ConversionError("config value of unsupported type (use strings, numbers, booleans or arrays)");
}

// Options by name from a TOML table; nested tables are flattened into their keys. An empty key
// ('' = 1 is valid TOML) names no option: refused with its position (source:line:column).
void flatten(const toml::table& table, const std::string& source, std::vector<CLI::ConfigItem>& items) {
    for (const auto& [key, node] : table) {
        if (key.str().empty()) {
            std::ostringstream message;
            message << source << ':' << key.source().begin.line << ':' << key.source().begin.column
                    << ": an empty key names no option";
            throw CLI::ParseError(message.str(), CLI::ExitCodes::ConversionError);
        }
        if (const toml::table* nested = node.as_table()) {
            flatten(*nested, source, items);
            continue;
        }
        CLI::ConfigItem item;
        item.name = std::string(key.str());
        for (char& c : item.name)
            if (c == '_') c = '-';
        if (const toml::array* array = node.as_array()) {
            for (const toml::node& element : *array) item.inputs.push_back(value_text(element));
        } else {
            item.inputs.push_back(value_text(node));
        }
        items.push_back(std::move(item));
    }
}

// TOML allows no raw control character but tab, line feed and carriage return (in strings they
// must be escaped). toml++ 3.3 asserts (aborts) on some of them in table headers, so they are
// refused here first, with their position.
void refuse_control_characters(const std::string& text, const std::string& source) {
    int line = 1, column = 1;
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if ((byte < 0x20 && c != '\t' && c != '\n' && c != '\r') || byte == 0x7f) {
            std::ostringstream message;
            message << source << ':' << line << ':' << column << ": control character U+" << std::hex
                    << std::uppercase << std::setw(4) << std::setfill('0') << static_cast<int>(byte)
                    << " is not allowed in TOML";
            throw CLI::ParseError(message.str(), CLI::ExitCodes::ConversionError);
        }
        if (c == '\n') {
            ++line;
            column = 1;
        } else {
            ++column;
        }
    }
}

// The file's text. Only a regular file up to kMaxConfigBytes is read: a device (/dev/zero), a
// pipe or a directory is refused before it is opened, so an endless stream is never read.
std::string read_config_text(const std::string& path) {
    struct stat status {};
    if (::stat(path.c_str(), &status) != 0)
        throw CLI::ParseError(path + ": cannot open config file (" + std::strerror(errno) + ")",
                              CLI::ExitCodes::FileError);
    if (S_ISDIR(status.st_mode))
        throw CLI::ParseError(path + ": is a directory, not a config file", CLI::ExitCodes::FileError);
    if (!S_ISREG(status.st_mode))
        throw CLI::ParseError(
            path + ": not a regular file (a device, pipe or socket); a config is a TOML file",
            CLI::ExitCodes::FileError);
    const auto too_large = [&](uintmax_t bytes) {
        return CLI::ParseError(path + ": " + std::to_string(bytes) +
                                   " bytes or more; a config file may have " +
                                   std::to_string(kMaxConfigBytes) + " bytes at most",
                               CLI::ExitCodes::FileError);
    };
    if (static_cast<uintmax_t>(status.st_size) > kMaxConfigBytes) throw too_large(status.st_size);
    std::ifstream file(path, std::ios::binary);
    if (!file) throw CLI::ParseError(path + ": cannot open config file", CLI::ExitCodes::FileError);
    std::string text(kMaxConfigBytes + 1, '\0');
    file.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(file.gcount()));
    if (text.size() > kMaxConfigBytes) throw too_large(text.size());  // it grew since stat
    return text;
}

}  // namespace

std::string TomlConfig::to_config(const CLI::App* app, bool default_also, bool write_description,
                                  std::string prefix) const {
    return CLI::ConfigTOML().to_config(app, default_also, write_description, std::move(prefix));
}

std::vector<CLI::ConfigItem> TomlConfig::from_config(std::istream& input) const {
    std::ostringstream text;
    text << input.rdbuf();
    refuse_control_characters(text.str(), source_);
    try {
        toml::table table = toml::parse(text.str());
        std::vector<CLI::ConfigItem> items;
        flatten(table, source_, items);
        return items;
    } catch (const toml::parse_error& error) {
        std::ostringstream message;
        message << source_ << ':' << error.source().begin.line << ':' << error.source().begin.column << ": "
                << error.description();
        throw CLI::ParseError(message.str(), CLI::ExitCodes::ConversionError);
    }
}

void add_config_option(CLI::App& command) {
    command.set_config("--config", "", "read options from a TOML file (command-line values win)");
    // CLI11 2.1 reads a config file only for the top-level app, so a subcommand applies its own
    // once its command line is parsed: each key fills the option of that name unless the
    // command line already set it.
    command.parse_complete_callback([&command] {
        const CLI::Option* config = command.get_config_ptr();
        if (config == nullptr || config->count() == 0) return;
        const std::string path = config->as<std::string>();
        std::istringstream text(read_config_text(path));
        for (const CLI::ConfigItem& item : TomlConfig(path).from_config(text)) {
            CLI::Option* option = command.get_option_no_throw("--" + item.name);
            if (option == nullptr || !option->get_configurable())
                throw CLI::ParseError(path + ": unknown key '" + item.fullname() + "'",
                                      CLI::ExitCodes::ExtrasError);
            if (option->count() > 0) continue;
            option->add_result(item.inputs);
            option->run_callback();
        }
    });
}

}  // namespace mixgpt::cli
