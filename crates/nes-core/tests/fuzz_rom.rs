//! Fuzzing the cartridge loader: `Header::parse` and `Console::new` take any bytes without
//! panicking, refuse bad ones with a typed `RomError`, and whatever they accept can run.
//!
//! Inputs: arbitrary bytes; bytes behind a valid `NES\x1a` magic with arbitrary header fields
//! (the iNES 1.0 and NES 2.0 size encodings, trainer, mapper nibbles); and small valid ROMs of
//! every supported board with bytes flipped, truncated or extended. ~2 s in release.

use nes_core::cart::Header;
use nes_core::{Console, RomError};
use proptest::prelude::*;

mod common;
use common::{tiny_rom, BOARDS};

fn valid_rom() -> impl Strategy<Value = Vec<u8>> {
    prop::sample::select(BOARDS).prop_map(|(m, p, c)| tiny_rom(m, p, c))
}

/// The contract for any input: no panic; `Console::new` accepts exactly what `Header::parse`
/// accepts; errors format; an accepted ROM runs frames without panicking.
fn check(rom: &[u8]) -> Result<(), TestCaseError> {
    let header = Header::parse(rom);
    let console = Console::new(rom);
    match (&header, &console) {
        (Ok(h), Ok(_)) => {
            prop_assert!(rom.len() >= h.prg_offset() + h.prg_rom + h.chr_rom);
        }
        (Err(a), Err(b)) => {
            prop_assert_eq!(a, b, "parse and new must refuse for the same reason");
            prop_assert!(!a.to_string().is_empty());
        }
        (h, c) => {
            return Err(TestCaseError::fail(format!(
                "Header::parse {:?} but Console::new {:?}",
                h.as_ref().err(),
                c.as_ref().err()
            )))
        }
    }
    if let Ok(mut nes) = console {
        for _ in 0..2 {
            nes.run_frame();
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        check(&bytes)?;
        if bytes.len() < 16 {
            prop_assert_eq!(Header::parse(&bytes), Err(RomError::TooShort { len: bytes.len() }));
        } else if &bytes[..4] != b"NES\x1a" {
            prop_assert_eq!(Header::parse(&bytes), Err(RomError::BadMagic));
        }
    }

    /// Valid magic, random header, a random amount of data: reaches the size and mapper checks.
    #[test]
    fn arbitrary_headers_never_panic(
        header in prop::collection::vec(any::<u8>(), 12),
        small_sizes in any::<bool>(),
        len in 0usize..0x12000,
    ) {
        let mut rom = b"NES\x1a".to_vec();
        rom.extend_from_slice(&header);
        if small_sizes {
            // Keep the declared sizes near the data so more inputs get past the length check.
            rom[4] &= 3;
            rom[5] &= 3;
            rom[9] &= 0x11;
        }
        rom.resize(16 + len, 0x4c);
        check(&rom)?;
    }

    /// NES 2.0 headers with supported mappers, including the exponent-multiplier size form
    /// (2^E * (2M + 1) bytes), which can declare sizes that are no multiple of a bank.
    #[test]
    fn nes2_headers_never_panic(
        board in prop::sample::select(BOARDS),
        sizes in (any::<u8>(), any::<u8>(), prop::sample::select(vec![0x00u8, 0x0f, 0xf0, 0xff, 0x10])),
        ram in (any::<u8>(), any::<u8>()),
        len in 0usize..0x12000,
    ) {
        let (mapper, _, _) = board;
        let mut rom = vec![b'N', b'E', b'S', 0x1a, sizes.0, sizes.1, (mapper & 0x0f) << 4, (mapper & 0xf0) | 0x08];
        rom.extend_from_slice(&[0, sizes.2, ram.0, ram.1, 0, 0, 0, 0]);
        rom.resize(16 + len, 0x4c);
        check(&rom)?;
    }

    #[test]
    fn mutated_valid_roms_never_panic(
        rom in valid_rom(),
        flips in prop::collection::vec((0usize..32, any::<u8>()), 0..6),
        body_flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..20),
        cut in prop::option::of(any::<prop::sample::Index>()),
        extra in prop::collection::vec(any::<u8>(), 0..300),
    ) {
        let mut rom = rom;
        // Header bytes are flipped most often: that is where the parser makes its decisions.
        for (i, x) in flips {
            let i = i % 16;
            rom[i] ^= x;
        }
        for (i, x) in body_flips {
            let i = i.index(rom.len());
            rom[i] ^= x;
        }
        if let Some(c) = cut {
            rom.truncate(c.index(rom.len() + 1));
        }
        rom.extend_from_slice(&extra);
        check(&rom)?;
    }
}

#[test]
fn every_tiny_board_boots_and_runs() {
    for &(m, p, c) in BOARDS {
        let mut nes = Console::new(&tiny_rom(m, p, c)).unwrap_or_else(|e| panic!("mapper {m}: {e}"));
        for _ in 0..10 {
            nes.run_frame();
        }
        assert_eq!(nes.fault(), None, "mapper {m} jammed");
        assert!(nes.ram()[0x11] >= 8, "mapper {m}: NMI handler ran {} times in 10 frames", nes.ram()[0x11]);
    }
}

/// Boards with bank counts that are no power of two (3, 5, 6, 7, 9 x 16 KiB PRG; 3 or 5 x 8 KiB
/// CHR) exist only in bad dumps and hacks, but must still not index out of bounds: the program
/// writes every byte value to the bank registers, so every bank number gets selected.
#[test]
fn odd_bank_counts_never_panic() {
    for &(m, _, chr) in BOARDS {
        for prg in 1..=9u8 {
            for c in 0..=5u8 {
                let c = if chr == 0 { 0 } else { c };
                let Ok(mut nes) = Console::new(&tiny_rom(m, prg, c)) else {
                    continue;
                };
                // ~700 loop iterations a frame: every byte value reaches $8000-$FFFF each frame.
                for _ in 0..3 {
                    nes.run_frame();
                }
            }
        }
    }
}
