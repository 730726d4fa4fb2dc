#!/usr/bin/env python3
"""Streams the text column of Parquet files (FineWeb, FineWeb-Edu, Dolma... downloads) as JSON lines
on standard output, one {"text": ...} object per row, for `mixgpt prepare -` to read without a
second copy of the corpus on disk:

    python3 scripts/parquet_to_jsonl.py shards/*.parquet | build/mixgpt prepare --output data/fineweb -

Needs pyarrow (`pip install pyarrow`; Debian 12 does not package it). Files are read one row group
at a time, so memory stays at about one row group (FineWeb's hold 1,000-100,000 rows) whatever the
file size. Rows whose text is null or empty are skipped and counted on standard error.
"""
import argparse
import json
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="Example: python3 scripts/parquet_to_jsonl.py a.parquet b.parquet "
                                            "| mixgpt prepare --output data/x -")
    parser.add_argument("files", nargs="+", help="Parquet files, read in the order given")
    parser.add_argument("--column", default="text", help="the column holding the text (default: text)")
    parser.add_argument("--key", default="text", help="the JSON key written (mixgpt prepare's --jsonl-key)")
    arguments = parser.parse_args()
    try:
        import pyarrow.parquet as parquet
    except ImportError:
        print("parquet_to_jsonl.py: needs pyarrow, which is not installed (pip install pyarrow)", file=sys.stderr)
        return 1
    written = skipped = 0
    out = sys.stdout
    try:
        for path in arguments.files:
            try:
                source = parquet.ParquetFile(path)
            except (OSError, ValueError) as error:
                print(f"parquet_to_jsonl.py: {path}: not a readable Parquet file ({error})", file=sys.stderr)
                return 1
            if arguments.column not in source.schema_arrow.names:
                print(f"parquet_to_jsonl.py: {path}: no column '{arguments.column}' (it has: "
                      f"{', '.join(source.schema_arrow.names)}); --column names the text column", file=sys.stderr)
                return 1
            for group in range(source.num_row_groups):
                for text in source.read_row_group(group, columns=[arguments.column]).column(0).to_pylist():
                    if not text:
                        skipped += 1
                        continue
                    out.write(json.dumps({arguments.key: text}, ensure_ascii=False))
                    out.write("\n")
                    written += 1
        out.flush()
    except BrokenPipeError:  # the reader stopped (mixgpt prepare failed or was interrupted)
        return 1
    print(f"parquet_to_jsonl.py: {written} rows written, {skipped} empty rows skipped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
