//! How often the CPU changes what the picture is drawn from while the PPU draws it: the input
//! to drawing a frame after it has run instead of during it (docs/kernel-notes.md, "Where
//! things stand (2026-12-01, after #66)", item 1). A model of which lines could be drawn from
//! the state at the frame's end, not a measurement of speed.
//!
//! ```text
//! cargo run --release -p nes-core --example render_events -- [FRAMES] [ROM ...]
//! ```
//! Each ROM (default: the four game ROMs in `$NESLE_ROM_DIR` or the nesle cache
//! (`$XDG_CACHE_HOME/nesle/roms`, default `~/.cache/nesle/roms`)) runs
//! FRAMES frames (default 1000) with seeded random buttons, new every 4 frames (SMB: Start once,
//! then SIMPLE_MOVEMENT; the others: any buttons, Start among them). At every scanline the PPU
//! reaches, the fields the pixels are drawn from are compared with the last scanline's: the
//! scroll registers (`ppu_t`, `ppu_x`), the bits of `ppu_ctrl` that pick pattern tables and
//! sprite size (3-5; the nametable bits are in `ppu_t`, the rest do not touch the picture), the
//! bits of `ppu_mask` that the palette indices depend on (0-4; not the emphasis), the palette,
//! the nametables, OAM, CHR RAM and the CHR banking. A change counts as "during drawing" when
//! the line it happened on is a visible line (0-239) or the pre-render line (whose end fetches
//! line 0's first tiles) and rendering was on before or after it.

use nes_core::flat::{FlatState, FIELDS, FLAT_STATE_SIZE};
use nes_core::Console;
use std::path::PathBuf;

const START: u8 = 0x08;
const WATCHED: [&str; 10] = [
    "ppu_t",
    "ppu_x",
    "ppu_ctrl",
    "ppu_mask",
    "ppu_palette",
    "cart_ciram",
    "ppu_oam",
    "cart_chr_ram",
    "cart_chr_map",
    "cart_mirroring",
];
const PRE_RENDER: u16 = 261;

#[path = "common/rng.rs"]
mod rng;
#[path = "common/smb.rs"]
mod smb;
use rng::{Rng, SIMPLE_MOVEMENT};

/// The byte ranges of the watched fields in a flat state.
fn watched_ranges() -> Vec<(&'static str, std::ops::Range<usize>)> {
    WATCHED
        .iter()
        .map(|w| {
            let &(name, ctype, count, offset) = FIELDS.iter().find(|f| f.0 == *w).expect("a FlatState field");
            (name, offset..offset + count * nes_core::flat::elem_size(ctype))
        })
        .collect()
}

/// The bits of a watched byte field that the picture depends on.
fn relevant_bits(field: &str) -> u8 {
    match field {
        "ppu_ctrl" => 0x38,
        "ppu_mask" => 0x1f,
        _ => 0xff,
    }
}

fn bytes(c: &Console) -> Box<[u8; FLAT_STATE_SIZE]> {
    let mut out = Box::new([0u8; FLAT_STATE_SIZE]);
    c.to_flat().to_bytes(&mut out);
    out
}

fn rendering(flat: &FlatState) -> bool {
    flat.ppu_mask & 0x18 != 0
}

#[derive(Default)]
struct Tally {
    frames: u64,
    /// Frames with at least one change during drawing.
    frames_touched: u64,
    /// Changes during drawing per watched field (in scanline intervals).
    per_field: Vec<u64>,
    /// Lines (0-239, 261) on which changes during drawing happened, and how often.
    lines: std::collections::BTreeMap<u16, u64>,
}

fn survey(name: &str, rom: &[u8], frames: u64, smb: bool) -> Tally {
    let ranges = watched_ranges();
    let mut c = Console::new(rom).expect("a valid ROM");
    let mut rng = Rng(0x9e37_79b9 ^ rom.len() as u32);
    let mut t = Tally { per_field: vec![0; ranges.len()], ..Tally::default() };
    let mut buttons = 0u8;
    for f in 0..frames {
        if f % 4 == 0 {
            buttons = if smb {
                if (40..44).contains(&f) {
                    START
                } else if f < 44 {
                    0
                } else {
                    SIMPLE_MOVEMENT[(rng.next() % 7) as usize]
                }
            } else {
                (rng.next() >> 11) as u8
            };
        }
        c.set_buttons(0, buttons);
        let mut prev = bytes(&c);
        let mut prev_flat = c.to_flat();
        let mut touched = false;
        c.bus.ppu.frame_complete = false;
        while !c.bus.ppu.frame_complete {
            let line = c.bus.ppu.scanline;
            c.step();
            if c.bus.ppu.scanline == line && !c.bus.ppu.frame_complete {
                continue;
            }
            let now = bytes(&c);
            let now_flat = c.to_flat();
            let drawing_line = line < 240 || line == PRE_RENDER;
            if drawing_line && (rendering(&prev_flat) || rendering(&now_flat)) {
                let mut any = false;
                for (k, (field, r)) in ranges.iter().enumerate() {
                    let bits = relevant_bits(field);
                    if prev[r.clone()].iter().zip(&now[r.clone()]).any(|(a, b)| (a ^ b) & bits != 0) {
                        t.per_field[k] += 1;
                        any = true;
                    }
                }
                if any {
                    *t.lines.entry(line).or_default() += 1;
                    touched = true;
                }
            }
            prev = now;
            prev_flat = now_flat;
        }
        c.bus.ppu.frame_complete = false;
        t.frames += 1;
        t.frames_touched += touched as u64;
    }
    println!("{name}: {} frames, {} with changes during drawing", t.frames, t.frames_touched);
    for (k, (field, _)) in ranges.iter().enumerate() {
        if t.per_field[k] > 0 {
            println!("  {field:<15} {:>7} line intervals", t.per_field[k]);
        }
    }
    let mut by_count: Vec<(u16, u64)> = t.lines.iter().map(|(&l, &n)| (l, n)).collect();
    by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let top: Vec<String> = by_count.iter().take(12).map(|(l, n)| format!("{l}:{n}")).collect();
    println!("  lines (line:count, most first): {}", top.join(" "));
    t
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let frames: u64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let roms: Vec<PathBuf> = if args.len() > 1 {
        args[1..].iter().map(PathBuf::from).collect()
    } else {
        ["super-mario-bros.nes", "tetris.nes", "zelda.nes", "contra.nes"].iter().map(|r| smb::rom_path(r)).collect()
    };
    for path in roms {
        let Ok(rom) = std::fs::read(&path) else {
            println!("{}: not found, skipped", path.display());
            continue;
        };
        let name = path.file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_default();
        survey(&name, &rom, frames, name.contains("mario"));
    }
}
