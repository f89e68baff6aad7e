//! The committed kernel headers match what nes-core generates, and C++ agrees with Rust on
//! the FlatState layout.

use nes_core::flat::{FlatState, FIELDS, FLAT_STATE_SIZE};
use std::path::Path;

#[test]
fn the_committed_kernel_headers_are_up_to_date() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernels/generated");
    let bless = std::env::var("NESLE_BLESS").is_ok_and(|v| v == "1");
    let mut stale = Vec::new();
    for (name, text) in nes_cuda::header::generated_headers() {
        let path = dir.join(name);
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != text {
            if bless {
                std::fs::write(&path, &text).unwrap();
            } else {
                stale.push(name);
            }
        }
    }
    assert!(
        stale.is_empty(),
        "kernels/generated/{stale:?} is stale: regenerate with `cargo run -p nes-cuda --bin gen-header` \
         (or NESLE_BLESS=1 cargo test -p nes-cuda --test generated)"
    );
}

#[test]
fn the_flat_state_has_the_pinned_size_and_offsets() {
    assert_eq!(FLAT_STATE_SIZE, 23136);
    assert_eq!(std::mem::size_of::<FlatState>(), 23136);
    let at = |name: &str| FIELDS.iter().find(|f| f.0 == name).map(|f| f.3);
    assert_eq!(at("bus_cycles"), Some(0));
    assert_eq!(at("ram"), Some(40), "RAM right after the five u64s, 8-byte aligned");
    assert_eq!(at("cart_chr_ram"), Some(40 + 0x800 + 0x1000 + 0x2000));
    assert_eq!(at("cart_prg_map"), Some(22580));
    assert_eq!(at("ppu_oam"), Some(22628), "the PPU's byte arrays right after the u32s, 4-byte aligned");
    assert_eq!(at("cpu_pc"), Some(22628 + 352));
    assert_eq!(at("reserved"), Some(FLAT_STATE_SIZE - 7));
}

#[test]
fn the_cpp_compiler_sees_the_same_flat_state_size() {
    assert_eq!(nes_cuda::host::c_state_size(), FLAT_STATE_SIZE);
}
