"""Hostile dataset files for the tests of the resource limits, written
byte by byte from docs/FORMAT.md with every checksum right (the Python
twin of tests/support/forge.rs, whose generators the command-line and
library tests use)."""

import struct
import zlib

TOC_FULL = 9


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def bits(v):
    """Bits needed to hold `v` (at least 1)."""
    return max(1, v.bit_length())


def payload(values, width):
    """Values of `width` bits, LSB first."""
    acc = 0
    for i, v in enumerate(values):
        acc |= v << (i * width)
    return acc.to_bytes((len(values) * width + 7) // 8, "little")


def packed(values, width):
    return varint(len(values)) + bytes([width]) + payload(values, width)


def bomb_batch(rows):
    """A TOC batch whose row k is columns 0..=k: rows * (rows + 1) / 2
    non-zeros from about 7 bytes a row."""
    out = b"TOCB\x01\x03" + varint(rows)
    out += packed([1] + [2] * (rows - 1), 2)
    out += packed(list(range(rows)), bits(rows - 1))
    out += packed([0] * rows, 0)
    out += b"\x00" + varint(1) + struct.pack("<d", 1.0)
    codes = [1, 1, 2]
    for k in range(2, rows):
        codes += [rows + k - 1, k + 1]
    return out + packed(codes, bits(2 * rows))


def int_labels(rows):
    """Version-2 integer labels, all 0."""
    return b"\x01" + varint(1) + varint(0) + payload([0] * rows, 1)


def dataset(pages, per_block, n_cols, nnz, version=2, sections=b""):
    """A dataset file of `pages` (rows, payload), `per_block` to a block,
    integer labels, the footer claiming `n_cols` and `nnz`."""
    out = bytearray(b"TOCD" + bytes([version, 0, 0, 0]))
    entries = []
    for b in range(0, len(pages), per_block):
        block = bytearray()
        group = pages[b : b + per_block]
        for rows, data in group:
            block += varint(rows) + int_labels(rows) + varint(len(data)) + data
        rows = sum(r for r, _ in group)
        entries.append((len(block), rows, len(group), zlib.crc32(block)))
        out += block
    footer_at = len(out)
    n_rows = sum(r for r, _ in pages)
    footer = bytearray(b"TOCF" + varint(n_cols) + varint(n_rows) + varint(nnz))
    footer.append(TOC_FULL)
    page_rows = max(r for r, _ in pages)
    payload_bytes = sum(len(d) for _, d in pages)
    for v in [page_rows, 1 << 22, len(pages), payload_bytes, 0, len(entries)]:
        footer += varint(v)
    for length, rows, n, crc in entries:
        footer += varint(length) + varint(rows) + varint(n) + struct.pack("<I", crc)
    footer += sections
    out += footer + struct.pack("<Q", footer_at) + struct.pack("<I", zlib.crc32(footer))
    return bytes(out + b"TOCD")


def chain_dict(depth):
    """A shared dictionary whose nodes are one chain of `depth` columns."""
    pairs = b"TOCB\x01\x03" + varint(depth) + packed([], 1)
    pairs += packed(list(range(depth)), bits(depth - 1)) + packed([0] * depth, 0)
    pairs += b"\x00" + varint(1) + struct.pack("<d", 1.0) + packed([], 1)
    gaps = [1, depth] + [1] * (depth - 3)
    escape, symbols = 3, []
    for g in gaps:
        symbols += [escape] * (g // escape) + [g % escape]
    out = varint(len(pairs)) + pairs + packed(symbols, 2)
    return out + packed(list(range(2, depth + 1)), bits(depth))


def dict_bomb(pages, per_block, depth):
    """Version 4: `pages` one-row compact pages naming the deepest node of
    a chain dictionary of `depth` columns (`depth` non-zeros a row)."""
    code = 2 * depth - 1
    page = b"\x01\x01" + payload([1], 1) + bytes([bits(code)]) + payload([code], bits(code))
    n_blocks = (pages + per_block - 1) // per_block
    d = chain_dict(depth)
    shared = b"SHRD\x01" + varint(1) + varint(n_blocks) + varint(len(d)) + d
    return dataset([(1, page)] * pages, per_block, depth, pages * depth, 4, shared)
