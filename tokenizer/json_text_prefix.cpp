#include "tokenizer/json_text_prefix.h"

#include <nlohmann/json.hpp>

namespace mixgpt {
namespace {

constexpr size_t kCut = std::string_view::npos;

size_t skip_space(std::string_view text, size_t at) {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t' || text[at] == '\r' || text[at] == '\n'))
        ++at;
    return at;
}

// One past the closing quote of the JSON string opening at text[at]; kCut when the cut comes first.
size_t string_end(std::string_view text, size_t at) {
    for (size_t i = at + 1; i < text.size(); ++i) {
        if (text[i] == '\\')
            ++i;
        else if (text[i] == '"')
            return i + 1;
    }
    return kCut;
}

// Where the JSON value starting at text[at] ends (the ',' or '}' after a number or literal); kCut
// when the cut comes first.
size_t value_end(std::string_view text, size_t at) {
    int depth = 0;
    for (size_t i = at; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '"') {
            const size_t end = string_end(text, i);
            if (end == kCut) return kCut;
            if (depth == 0) return end;
            i = end - 1;
        } else if (c == '{' || c == '[') {
            ++depth;
        } else if (c == '}' || c == ']') {
            if (depth == 0) return i;
            if (--depth == 0) return i + 1;
        } else if (c == ',' && depth == 0) {
            return i;
        }
    }
    return kCut;
}

bool decode_string(std::string_view quoted, std::string& text) {
    const auto value = nlohmann::json::parse(quoted.begin(), quoted.end(), nullptr, false);
    if (value.is_discarded() || !value.is_string()) return false;
    text = value.get<std::string>();
    return true;
}

// The string opening at text[at], cut by the end of `text`: its escapes that are whole, decoded.
bool decode_cut_string(std::string_view text, size_t at, std::string& decoded) {
    size_t end = at + 1;
    for (size_t i = at + 1; i < text.size();) {
        const size_t length = text[i] != '\\' ? 1 : i + 1 < text.size() && text[i + 1] == 'u' ? 6 : 2;
        if (i + length > text.size()) break;
        i += length;
        end = i;
    }
    // A \uD8xx..\uDBxx whose low surrogate was cut off does not decode: drop it.
    for (const size_t drop : {size_t{0}, size_t{6}}) {
        if (end <= at + drop) return false;
        if (decode_string(std::string(text.substr(at, end - drop - at)) + '"', decoded)) return true;
    }
    return false;
}

}  // namespace

bool json_text_prefix(std::string_view head, const std::string& key, std::string& text) {
    size_t at = skip_space(head, 0);
    if (at >= head.size() || head[at] != '{') return false;
    for (at = skip_space(head, at + 1); at < head.size() && head[at] == '"';) {
        const size_t name_end = string_end(head, at);
        std::string name;
        if (name_end == kCut || !decode_string(head.substr(at, name_end - at), name)) return false;
        at = skip_space(head, name_end);
        if (at >= head.size() || head[at] != ':') return false;
        at = skip_space(head, at + 1);
        if (at >= head.size()) return false;
        if (name == key) {
            if (head[at] != '"') return false;
            const size_t end = string_end(head, at);
            return end != kCut ? decode_string(head.substr(at, end - at), text)
                               : decode_cut_string(head, at, text);
        }
        const size_t end = value_end(head, at);
        if (end == kCut) return false;
        at = skip_space(head, end);
        if (at >= head.size() || head[at] != ',') return false;
        at = skip_space(head, at + 1);
    }
    return false;
}

}  // namespace mixgpt
