#!/usr/bin/env python3
"""An independent reader of tocpile dataset files, written from
docs/FORMAT.md alone (no code of the crate was consulted for it): that
the document is exact enough for a reader in another language to parse a
file down to its rows is what `python/tests/test_format_reader.py`
checks, on the golden files of every version, against what the crate
decodes.

It reads TOC pages only (formats TOC_SPARSE, TOC_LOGICAL and TOC_FULL:
the batches of versions 1 and 2, the version-3 pages and the compact
pages of versions 4 to 8 and the pages of row ids from version 7,
against their segments' shared dictionaries, whose values may be grouped
from version 8, version 5's page copies and the runs of them from
version 6, and the scaled labels of version 8) and
checks the file's checksums; it trusts the rest (a validator it is not).

    python3 tests/format_reader.py FILE.toc    # prints one row a line
"""

import struct
import sys
import zlib

# The grammar lines of docs/FORMAT.md this reader implements, verbatim:
# the test fails when the document no longer says what the reader reads.
GRAMMAR = [
    "packed       := count:varint width:u8 payload",
    "escaped      := packed                         of symbols, width >= 1 (below)",
    "batch        := magic version flags n_cols row_lengths pair_cols values codes?",
    "page3        := magic 0x03 flags n_cols row_lengths codes",
    "page4        := 0x01 lens_width:u8 lens:bits{rows * lens_width}",
    "page7ids     := 0x02 distinct:varint lens_width:u8 lens:bits{distinct * lens_width}",
    "dict         := pairs_len:varint pairs:u8{pairs_len} parents:escaped keys:packed",
    "              | 0x03 groups:u8 group{groups} raw_len:varint f64le{raw_len}",
    "              | escaped                        if ID_GAPS: n_pairs elements",
    "group        := exponent:u8 base:zigzag-varint deltas:escaped",
    "page       := rows:varint labels payload_len:varint payload      rows >= 1 in versions 5 to 8",
    "            | 0x00                                               version 5: a page copy",
    "            | 0x00 copies:varint                                 versions 6 to 8: a run of page copies, copies >= 1",
    "            | 0x00 float_labels | 0x01 int_labels                versions 2 to 8",
    "            | 0x02 scaled_labels                                 version 8",
    "scaled_labels := exponent:u8 base:zigzag-varint width:u8 offsets:bits{rows * width}",
    "shared     := \"SHRD\" version:u8(=1) n:varint segment{n}",
    "segment    := blocks:varint dict_len:varint dict:u8{dict_len}",
]


class Reader:
    """Bytes read front to back (all integers little-endian)."""

    def __init__(self, data, at=0):
        self.data = data
        self.at = at

    def u8(self):
        v = self.data[self.at]
        self.at += 1
        return v

    def take(self, n):
        if self.at + n > len(self.data):
            raise ValueError(f"truncated at byte {self.at}: {n} bytes wanted")
        out = self.data[self.at : self.at + n]
        self.at += n
        return out

    def varint(self):
        """Unsigned LEB128."""
        shift, value = 0, 0
        while True:
            b = self.u8()
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7

    def zigzag(self):
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def f64(self):
        return struct.unpack("<d", self.take(8))[0]

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def u64(self):
        return struct.unpack("<Q", self.take(8))[0]

    def bits(self, count, width):
        """`count` values of `width` bits: value i at bits [i*w, (i+1)*w)
        of the payload read as a little-endian bit stream."""
        payload = self.take((count * width + 7) // 8)
        acc = int.from_bytes(payload, "little")
        mask = (1 << width) - 1
        return [(acc >> (i * width)) & mask for i in range(count)]

    def packed(self):
        """`packed := count:varint width:u8 payload`."""
        count = self.varint()
        width = self.u8()
        return self.bits(count, width)

    def escaped(self):
        """A packed array of symbols read as elements: the all-ones symbol
        adds itself to the element and continues, any other ends it."""
        count = self.varint()
        width = self.u8()
        symbols = self.bits(count, width)
        escape = (1 << width) - 1
        out, acc = [], 0
        for s in symbols:
            acc += s
            if s != escape:
                out.append(acc)
                acc = 0
        return out


FLAG_TREE, FLAG_INDEXED, FLAG_GAPS, FLAG_SHARED, FLAG_ID_GAPS = 1, 2, 4, 8, 16


def scaled_entries(r):
    """A scaled dictionary (or a group): exponent, base, escaped deltas;
    entry k is (base + deltas[0] + ... + deltas[k]) / 10^exponent."""
    exponent = r.u8()
    base = r.zigzag()
    entries, n = [], base
    for delta in r.escaped():
        n += delta
        entries.append(float(n) / float(10**exponent))
    return entries


def read_values(r, id_gaps):
    """`values`: indexed (value ids and a dictionary): the ids as stored
    (with ID_GAPS, the escaped elements) and the dictionary."""
    ids = r.escaped() if id_gaps else r.packed()
    kind = r.u8()
    if kind == 0x00:
        dictionary = [r.f64() for _ in range(r.varint())]
    elif kind == 0x01:
        base = r.zigzag()
        dictionary = [float(base + o) for o in r.packed()]
    elif kind == 0x02:
        dictionary = scaled_entries(r)
    elif kind == 0x03:
        # Grouped (a shared dictionary's pairs, file version 8): each
        # group a scaled dictionary, then raw f64s; ids run through them
        # in that order.
        dictionary = []
        for _ in range(r.u8()):
            dictionary += scaled_entries(r)
        dictionary += [r.f64() for _ in range(r.varint())]
    else:
        raise ValueError(f"dictionary kind {kind}")
    return ids, dictionary


class Tree:
    """A decode tree: node 0 the root, nodes 1..=n the first layer (node
    p is pair p - 1), then created nodes. Each node: its sequence of pair
    ids, kept whole (fine for the small files this reader is for)."""

    def __init__(self, pairs):
        self.pairs = pairs  # (column, value) per pair
        self.seq = [[]] + [[p] for p in range(len(pairs))]

    def add(self, parent, key):
        """A node of parent `parent` and key pair `key` (a pair index)."""
        self.seq.append(self.seq[parent] + [key])

    def rows(self, row_lengths, codes):
        """Algorithm 2: between consecutive codes a, b of a row, a node of
        parent a whose key is the first pair of b's sequence."""
        out, at = [], 0
        for length in row_lengths:
            row = codes[at : at + length]
            at += length
            for a, b in zip(row, row[1:]):
                self.add(a, self.seq[b][0])
            out.append([self.pairs[p] for c in row for p in self.seq[c]])
        return out


def read_batch(blob):
    """A batch of version 1 or 2: (n_cols, pairs, row lengths, codes or
    None for a flat batch)."""
    r = Reader(blob)
    assert r.take(4) == b"TOCB", "magic"
    version, flags = r.u8(), r.u8()
    assert version in (1, 2), f"batch version {version}"
    n_cols = r.varint()
    row_lengths = r.packed()
    if flags & FLAG_GAPS:
        gaps = r.escaped()
    else:
        cols = r.packed()
    ids = dictionary = None
    if flags & FLAG_INDEXED:
        ids, dictionary = read_values(r, flags & FLAG_ID_GAPS)
    else:
        values = [r.f64() for _ in range(len(cols))]
    if flags & FLAG_GAPS:
        cols, col = [], 0
        starts = set()
        if not flags & FLAG_TREE:
            at = 0
            for length in row_lengths:
                starts.add(at)
                at += length
        for k, g in enumerate(gaps):
            col = g if k in starts else col + g
            cols.append(col)
    if flags & FLAG_ID_GAPS:
        # Each id is its element where its column starts, else the
        # previous pair's id plus its element.
        elements, ids = ids, []
        for k, e in enumerate(elements):
            same = k > 0 and cols[k] == cols[k - 1]
            ids.append(ids[-1] + e if same else e)
    if ids is not None:
        values = [dictionary[i] for i in ids]
    codes = r.packed() if flags & FLAG_TREE else None
    assert r.at == len(blob), "trailing bytes"
    return n_cols, list(zip(cols, values)), row_lengths, codes


def batch_rows(blob):
    """The rows of a self-contained batch."""
    _, pairs, row_lengths, codes = read_batch(blob)
    if codes is None:
        out, at = [], 0
        for length in row_lengths:
            out.append(pairs[at : at + length])
            at += length
        return out
    return Tree(pairs).rows(row_lengths, codes)


def read_dictionary(dict_bytes):
    """A segment's shared dictionary: the shared tree (its nodes'
    sequences) and its column count."""
    r = Reader(dict_bytes)
    pairs_len = r.varint()
    n_cols, pairs, row_lengths, codes = read_batch(r.take(pairs_len))
    assert row_lengths == [] and codes == [], "the pairs hold no rows"
    parents = r.escaped()
    keys = r.packed()
    assert r.at == len(dict_bytes) and len(parents) == len(keys)
    tree = Tree(pairs)
    parent = 0
    for gap, key in zip(parents, keys):
        parent += gap
        tree.add(parent, key - 1)
    return tree, n_cols


def shared_rows(tree, row_lengths, codes):
    """A page's rows against a copy of its dictionary's tree (the page's
    own nodes go after the shared ones, and are the page's alone)."""
    copy = Tree(tree.pairs)
    copy.seq = list(tree.seq)
    return copy.rows(row_lengths, codes)


def page_rows(payload, rows, dictionary):
    """A page of a TOC file: a batch, a version-3 page or a compact page."""
    if payload[:4] == b"TOCB" and payload[4] in (1, 2):
        return batch_rows(payload)
    r = Reader(payload)
    if payload[:4] == b"TOCB":
        r.take(4)
        assert r.u8() == 3 and r.u8() == FLAG_TREE | FLAG_SHARED
        r.varint()  # n_cols: the dictionary's
        row_lengths = r.packed()
        codes = r.packed()
    elif payload[0] == 0x02:
        # A page of row ids: the distinct rows, then which one each row is.
        r.u8()
        distinct = r.varint()
        lengths = r.bits(distinct, r.u8())
        table = r.bits(sum(lengths), r.u8())
        ids = r.bits(rows, r.u8())
        starts = [sum(lengths[:i]) for i in range(distinct + 1)]
        row_lengths = [lengths[i] for i in ids]
        codes = [c for i in ids for c in table[starts[i] : starts[i + 1]]]
    else:
        assert r.u8() == 0x01, "compact page form"
        row_lengths = r.bits(rows, r.u8())
        codes = r.bits(sum(row_lengths), r.u8())
    assert r.at == len(payload), "trailing bytes"
    return shared_rows(dictionary, row_lengths, codes)


def read_labels(r, rows, version):
    """A page's labels: float (a dictionary and packed ids), or in
    version 2 on the integer form (zigzag values, ids of fixed width)."""
    kind = 0 if version == 1 else r.u8()
    if kind == 0:
        dictionary = [r.f64() for _ in range(r.varint())]
        return [dictionary[i] for i in r.packed()]
    if kind == 2:
        # scaled_labels (version 8): an offset of `width` bits per row.
        assert version >= 8, "scaled labels before version 8"
        exponent, base, width = r.u8(), r.zigzag(), r.u8()
        return [float(base + o) / float(10**exponent) for o in r.bits(rows, width)]
    n = r.varint()
    values = [r.zigzag() for _ in range(n)]
    width = max(1, (n - 1).bit_length())
    return [float(values[i]) for i in r.bits(rows, width)]


def read_file(data):
    """Every row of a dataset file of TOC pages: a list of
    (label, [(column, value), ...]) in file order, and the footer's
    column count."""
    assert data[:4] == b"TOCD" and data[-4:] == b"TOCD", "magic"
    version = data[4]
    assert 1 <= version <= 8 and data[5:8] == b"\0\0\0", "header"
    footer_at, footer_crc = struct.unpack("<QI", data[-16:-4])
    footer = data[footer_at:-16]
    assert zlib.crc32(footer) == footer_crc, "footer checksum"
    r = Reader(footer)
    assert r.take(4) == b"TOCF"
    n_cols, n_rows, nnz = r.varint(), r.varint(), r.varint()
    page_format = r.u8()
    assert page_format in (7, 8, 9), "TOC pages only"
    page_rows_, block_bytes, n_pages, payload_bytes = (r.varint() for _ in range(4))
    r.take(r.varint())  # schema
    entries = [(r.varint(), r.varint(), r.varint(), r.u32()) for _ in range(r.varint())]
    segments = []
    while r.at < len(footer):
        tag = r.take(4)
        section_version = r.u8()
        if tag == b"SCAL":
            r.u8()  # kind
            n = r.varint()
            if section_version == 1:
                r.take(8 * n)
            else:
                for _ in range(r.varint()):
                    r.varint()
                    r.take(8)
        elif tag == b"LMIX":
            r.varint()
            r.take(8)
        elif tag == b"SHRD":
            for _ in range(r.varint()):
                blocks = r.varint()
                segments.append((blocks, r.take(r.varint())))
        else:
            raise ValueError(f"unknown footer section {tag!r}")
    # The dictionary of each block: segments are runs of blocks in order.
    block_dicts = []
    for blocks, d in segments:
        dictionary = read_dictionary(d)[0] if d else None
        block_dicts += [dictionary] * blocks
    if not segments:
        block_dicts = [None] * len(entries)
    out, offset = [], 8
    for (length, rows_, pages, crc), dictionary in zip(entries, block_dicts):
        block = data[offset : offset + length]
        assert zlib.crc32(block) == crc, f"block at {offset}: checksum"
        offset += length
        b = Reader(block)
        previous = None
        page = 0
        while page < pages:
            copies = 1
            if version >= 5 and block[b.at] == 0:
                # A page copy: the block's previous page again; in version
                # 6 a run of `copies` of them.
                b.u8()
                if version >= 6:
                    copies = b.varint()
                    assert 1 <= copies <= pages - page, "copies in a run"
                assert previous is not None, "a page copy first in its block"
                rows, labels, payload = previous
            else:
                rows = b.varint()
                labels = read_labels(b, rows, version)
                payload = b.take(b.varint())
                previous = (rows, labels, payload)
            decoded = list(zip(labels, page_rows(payload, rows, dictionary)))
            out.extend(decoded * copies)
            page += copies
        assert b.at == len(block)
    assert offset == footer_at and len(out) == n_rows
    assert sum(len(row) for _, row in out) == nnz
    return out, n_cols


def main():
    with open(sys.argv[1], "rb") as f:
        rows, _ = read_file(f.read())
    for label, row in rows:
        print(label, " ".join(f"{c}:{v!r}" for c, v in row))


if __name__ == "__main__":
    main()
