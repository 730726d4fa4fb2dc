"""The scratch folder README's commands run in: `build/` and `scripts/` of this checkout, and the
files README takes a user to have, made from the King James Bible (Debian's bible-kjv) and the
repository's test fixtures:

- books/ (one .txt per book of the Bible) and notes/*.txt (its last 40 chapters): plain text;
- dump/: JSON Lines of the first half of the Bible's chapters, {"text": ...}, plain, .json.gz, .jsonl.zst, .jsonl.xz;
- more.jsonl.zst: more chapters, for --append;
- gpt2/: GPT-2's encoder.json and vocab.bpe (tests/fixtures/gpt2);
- mybook.txt: one book;
- my_task.jsonl and hellaswag_val.jsonl: the first 16 examples of tests/fixtures/multiple_choice's
  task files, the second standing for the download README's curl makes;
- runs/demo and runs/gpt2: links to runs/d6 (trained by README's Train block), standing for
  `make demo`'s run and GPT-2's imported weights, neither made here.
"""
import ctypes
import ctypes.util
import gzip
import json
import lzma
import os
import sys

REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPOSITORY, "scripts"))

from make_kjv_tasks import kjv_chapters  # noqa: E402

TASK_EXAMPLES = 16


def zstd_compress(data):
    """A zstd frame of data, by the libzstd that mixgpt reads .zst with (no Python module needed)."""
    library = ctypes.CDLL(ctypes.util.find_library("zstd") or "libzstd.so.1")
    library.ZSTD_compressBound.restype = ctypes.c_size_t
    library.ZSTD_compressBound.argtypes = [ctypes.c_size_t]
    library.ZSTD_compress.restype = ctypes.c_size_t
    library.ZSTD_compress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int]
    library.ZSTD_isError.argtypes = [ctypes.c_size_t]
    output = ctypes.create_string_buffer(library.ZSTD_compressBound(len(data)))
    size = library.ZSTD_compress(output, len(output), data, len(data), 3)
    if library.ZSTD_isError(size):
        raise RuntimeError("libzstd could not compress")
    return output.raw[:size]


def chapter_texts():
    """[(book, chapter text), ...] in the Bible's order."""
    return [(heading.rsplit(" ", 1)[0], heading + "\n" + "\n".join(f"{n} {text}" for n, text in verses))
            for heading, verses in kjv_chapters()]


def jsonl(texts):
    return "".join(json.dumps({"text": text}) + "\n" for text in texts).encode()


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as file:
        file.write(data)


def make_world(folder, build):
    """Fills the empty folder `folder` for README's commands, with `build` as its build/."""
    os.symlink(os.path.abspath(build), os.path.join(folder, "build"))
    os.symlink(os.path.join(REPOSITORY, "scripts"), os.path.join(folder, "scripts"))
    chapters = chapter_texts()
    books = {}
    for book, text in chapters:
        books.setdefault(book, []).append(text)
    for book, texts in books.items():
        write(os.path.join(folder, "books", book.replace(" ", "_") + ".txt"), "\n\n".join(texts).encode())
    for index, (_, text) in enumerate(chapters[-40:]):
        write(os.path.join(folder, "notes", f"note-{index}.txt"), text.encode())
    texts = [text for _, text in chapters[:len(chapters) // 2]]
    quarter = len(texts) // 4
    write(os.path.join(folder, "dump", "part-0.jsonl"), jsonl(texts[:quarter]))
    write(os.path.join(folder, "dump", "part-1.json.gz"), gzip.compress(jsonl(texts[quarter:2 * quarter]), mtime=0))
    write(os.path.join(folder, "dump", "part-2.jsonl.zst"), zstd_compress(jsonl(texts[2 * quarter:3 * quarter])))
    write(os.path.join(folder, "dump", "part-3.jsonl.xz"), lzma.compress(jsonl(texts[3 * quarter:])))
    write(os.path.join(folder, "more.jsonl.zst"),
          zstd_compress(jsonl(f"{text}\n(a second edition)" for text in texts[:20])))
    write(os.path.join(folder, "mybook.txt"), "\n\n".join(books["Ruth"]).encode())
    for name in ("encoder.json", "vocab.bpe"):
        with gzip.open(os.path.join(REPOSITORY, "tests", "fixtures", "gpt2", name + ".gz")) as file:
            write(os.path.join(folder, "gpt2", name), file.read())
    tasks = os.path.join(REPOSITORY, "tests", "fixtures", "multiple_choice")
    for fixture, name in (("mc.jsonl", "my_task.jsonl"), ("hellaswag.jsonl", "hellaswag_val.jsonl")):
        with open(os.path.join(tasks, fixture), "rb") as file:
            write(os.path.join(folder, name), b"".join(file.readlines()[:TASK_EXAMPLES]))
    os.makedirs(os.path.join(folder, "runs"))
    for stand_in in ("demo", "gpt2"):
        os.symlink("d6", os.path.join(folder, "runs", stand_in))
