//! What the kernel tests share: the seeded input generator of nes-core's examples (the GPU
//! benchmark draws its actions with the same xorshift32).

#[path = "../../../nes-core/examples/common/rng.rs"]
pub mod rng;
pub use rng::Rng;

use std::path::PathBuf;

// Where the game ROMs are (`rom_path`: NESLE_ROM_DIR, then the folder `nesle roms fetch`
// fills), as nes-core's examples look.
#[path = "../../../nes-core/examples/common/smb.rs"]
mod smb;
#[allow(unused_imports)] // not every test crate that shares this module reads ROMs
pub use smb::rom_path;

/// A game ROM from [`rom_path`], if there.
#[allow(dead_code)]
pub fn rom(name: &str) -> Option<Vec<u8>> {
    std::fs::read(rom_path(name)).ok()
}

/// Every .nes file under the test ROM folder (NESLE_TEST_ROMS, default ../shared/test-roms).
#[allow(dead_code)]
pub fn test_roms() -> Vec<PathBuf> {
    let dir = std::env::var("NESLE_TEST_ROMS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/test-roms"));
    let mut stack = vec![dir];
    let mut found = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "nes") {
                found.push(p);
            }
        }
    }
    assert!(!found.is_empty(), "no test ROMs found");
    found
}
