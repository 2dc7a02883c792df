//! Packing, unpacking and the readers of `wire`, against plain values.

use super::*;

#[test]
fn pack_unpack_every_width() {
    for width in 0..=32u8 {
        let max = if width == 0 {
            0
        } else {
            u32::MAX >> (32 - width)
        };
        for count in [0usize, 1, 2, 7, 8, 9, 63, 64, 65, 200] {
            let values: Vec<u32> = (0..count)
                .map(|i| match i % 4 {
                    0 => max,
                    1 => 0,
                    2 => (i as u32).wrapping_mul(2_654_435_761) & max,
                    _ => max / 2,
                })
                .collect();
            let mut buf = Vec::new();
            write_packed(&mut buf, &values, width);
            let mut r = Reader::new(&buf);
            let p = read_packed(&mut r, "test", true).unwrap();
            assert_eq!(r.remaining(), 0);
            let mut out = Vec::new();
            unpack_into(p.payload(&buf), p.width, p.count, &mut out);
            assert_eq!(out, values, "width {width} count {count}");
            for (i, &v) in values.iter().enumerate() {
                assert_eq!(
                    packed_get(p.payload(&buf), width, i),
                    v,
                    "width {width} at {i}"
                );
            }
        }
    }
}

#[test]
fn varint_round_trip_and_rejects() {
    for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
        let mut buf = Vec::new();
        write_varint(&mut buf, v);
        assert_eq!(Reader::new(&buf).varint("v").unwrap(), v);
    }
    // Overlong: a redundant zero group.
    assert!(matches!(
        Reader::new(&[0x80, 0x00]).varint("v"),
        Err(Error::BadVarint { offset: 0, .. })
    ));
    // Overflow past 64 bits.
    let too_big = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
    assert!(matches!(
        Reader::new(&too_big).varint("v"),
        Err(Error::BadVarint { .. })
    ));
    assert!(matches!(
        Reader::new(&[0x80]).varint("v"),
        Err(Error::Truncated { .. })
    ));
}

#[test]
fn varint_len_matches_write_varint() {
    for v in [0u64, 1, 127, 128, 16_383, 16_384, u32::MAX as u64, u64::MAX] {
        let mut out = Vec::new();
        write_varint(&mut out, v);
        assert_eq!(varint_len(v), out.len(), "{v}");
    }
}

#[test]
fn fixed_width_and_magic() {
    let mut out = b"TOCX".to_vec();
    write_u32(&mut out, 7);
    write_u64(&mut out, u64::MAX);
    write_f64s(&mut out, &[1.5, -0.0]);
    write_u32s(&mut out, &[1, 2]);
    let mut r = Reader::new(&out);
    r.magic(b"TOCX").unwrap();
    assert_eq!(r.u32("a").unwrap(), 7);
    assert_eq!(
        r.u64_max("b", 5),
        Err(Error::FieldOutOfRange {
            what: "b",
            offset: 8,
            value: u64::MAX,
            max: 5
        })
    );
    let f = r.f64s(2, "c").unwrap();
    assert_eq!((f[0], f[1].to_bits()), (1.5, (-0.0f64).to_bits()));
    assert_eq!(r.u32s(2, "d").unwrap(), [1, 2]);
    assert!(matches!(
        r.u32s(u64::MAX, "e"),
        Err(Error::Truncated { what: "e", .. })
    ));
    assert_eq!(
        Reader::new(b"TOCB").magic(b"TOCX"),
        Err(Error::BadMagic {
            expected: *b"TOCX",
            found: b"TOCB".to_vec()
        })
    );
    assert_eq!(
        Reader::new(b"TO").magic(b"TOCX"),
        Err(Error::BadMagic {
            expected: *b"TOCX",
            found: b"TO".to_vec()
        })
    );
}

#[test]
fn zigzag_round_trip() {
    for v in [0i64, 1, -1, 63, -64, i64::MAX, i64::MIN] {
        assert_eq!(unzigzag(zigzag(v)), v);
    }
}
